"""The Files API (client.files): uploads and their bytes in the files storage."""
