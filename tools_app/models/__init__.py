"""Tool state that outlives one response: code interpreter containers and the MCP servers
an operator registered. Each model lives in the module of the tool that owns it."""

from tools_app.models.containers import Container, ContainerFile, ContainerFileSource, ContainerStatus
from tools_app.models.mcp_servers import McpServer, McpTransport

__all__ = ["Container", "ContainerFile", "ContainerFileSource", "ContainerStatus", "McpServer", "McpTransport"]
