"""The HTTP layer every capability's views share: the API view base (authentication by API
key, scopes), query and body parameters, errors in OpenAI's shape, and the OpenAPI
document's common pieces."""
