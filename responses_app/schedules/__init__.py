"""Scheduled and recurring responses: a tenant's stored create request, run by beat."""
