"""The harmony `browser` tool (web_search): search backends, browsing sessions, citations."""
