"""Embedding models: POST /v1/embeddings and the semantic half of vector store search."""
