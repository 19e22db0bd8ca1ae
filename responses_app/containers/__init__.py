"""Containers (``client.containers`` and their files): the API, its bodies, and the Files API's
files copied in. The container itself, its files on disk, its lock and its expiry are
tools_app's (containers.py, container_files.py, container_store.py; model and table there),
which the code interpreter uses without the API; this package is the API on top of them,
here because it needs the HTTP layer and the Files API, and tools_app imports nothing of
responses_app."""
