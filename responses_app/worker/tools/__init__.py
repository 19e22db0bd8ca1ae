"""The tools a response's model calls: the server's (code_interpreter, web_search,
file_search, MCP), each in a module of its own, made by registry.py; the client's
(function-shaped shell, local_shell and apply_patch calls, a client-run tool search) and
refused calls. tools_app is reached only through tools_app_adapter.py."""
