"""MCP client sessions and the operator registry of MCP servers (only tools_app knows MCP)."""
