"""Writes: create, cancel, delete, and the recovery of lost responses.

The API, the admin and the Celery tasks all come through here, so a response changes
state the same way whoever asks. Status changes are compare-and-set UPDATEs, and a
response ends only through stream/store.end_response (its terminal status and event in
one transaction).

- create.py: admission, the stored request, its enqueue; input token counts; a compaction's turn
- steered.py: the successor of a steered response
- cancel.py: cancel, re-run, delete
- recovery.py: the lease reaper, the cancel of responses whose socket is gone, the store=false purge
"""
