"""Small helpers that carry no Responses vocabulary."""
