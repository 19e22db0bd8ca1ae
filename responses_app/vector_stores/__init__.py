"""Vector stores: files attached, ingested into chunks, and searched (the Vector Stores API
and the file_search tool)."""
