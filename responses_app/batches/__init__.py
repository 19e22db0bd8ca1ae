"""The Batch API (client.batches): a file of create requests, validated, run on the model
workers' spare capacity as ordinary responses, and written out as an output file and an
error file."""
