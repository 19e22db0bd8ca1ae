"""Writes: create, cancel, delete, and the recovery of lost responses.

The API, the admin and the Celery tasks all come through here, so a response changes
state the same way whoever asks. Status changes are compare-and-set UPDATEs, and a
response ends only through services/ended.end_response (its terminal status and event in
one transaction).

- create.py: admission, the stored request, its enqueue; input token counts; a compaction's turn
- steered.py: the successor of a steered response
- ended.py: the one end of a response, and what follows it, in a fixed order
- cancel.py: cancel, re-run, delete
- foreground.py: what a foreground create's view waits on (its end or its stream), cancelled when its client hangs up
- recovery.py: the lease reaper, the cancel of responses whose socket is gone, the store=false purge
- redelivery.py: a queued response whose message was lost is sent again
"""
