"""Vector stores: retrieval quality, ingestion speed and search latency, on the real code
paths in one process (no HTTP in between), for each database, for each ranking: words only
(lexical), meaning only (semantic: the default embedding model, EMBEDDING_MODELS) and both
fused (hybrid, the default), as ``ranking_options.hybrid_search`` weights choose them.

- quality: a handbook of 220 documents written from code (22 subjects, each for 10 offices,
  with boilerplate every document shares) and 50 labelled questions that paraphrase them
  (other word forms, other word order, some without the subject's own words); recall@5 is the
  share of questions whose document is among the files of the first 5 results of
  ``vector_stores.search``, and MRR the mean reciprocal rank of that document;
- ingest: chunks per second of ``ingest.ingest`` (read, chunk, analyze, embed, index and
  commit), one file after another in one thread as a worker's task runs it, by wall clock
  and by the process's CPU time, for a store without an embedding model and one with;
- search: a store of ``--chunks`` chunks (100,000 by default; built with the index writes
  of ingestion, ``indexing.add_chunks``, from pseudo-words drawn from a Zipf law, and their
  vectors; on PostgreSQL then vacuumed and analyzed, as autovacuum would), then
  ``--queries`` searches of 2 to 5 of those words; p50 and p95 of their wall
  time, once the first query has read the index and the vectors into memory.

    .venv/bin/python bench/vector_stores.py [--databases postgresql,sqlite] [--chunks 100000]

It starts its own PostgreSQL and Redis (scripts/test-services.sh in .run/bench-vector-stores)
and stops them. The last line sums up the first database's figures.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:  # run as a script, only bench/ would be on sys.path
    sys.path.insert(0, str(ROOT))

from bench.harness import per_database  # noqa: E402

SERVICES_DIR = ROOT / ".run" / "bench-vector-stores"
# The rankings measured, as ranking_options.hybrid_search weights (embedding, text): words
# only, meaning only, both fused (the default).
RANKINGS = {"lexical": (0.0, 1.0), "semantic": (1.0, 0.0), "hybrid": (1.0, 1.0)}

# --- the handbook ------------------------------------------------------------------------------

OFFICES = ["Lisbon", "Oslo", "Nairobi", "Osaka", "Denver", "Krakow", "Montreal", "Santiago", "Dublin", "Hanoi"]
# (subject, its facts with {office} and {n}, a question that uses its words in other forms, one that does not)
SUBJECTS = [
    ("parking permits", "Parking permits for the {office} office are issued by facilities within {n} days; "
     "each permit covers one vehicle.", "How long does issuing a parking permit take in {office}?",
     "When will I get my car park pass in {office}?"),
    ("laptop replacement", "A broken laptop at the {office} office is replaced within {n} working days by IT "
     "support.", "My laptop broke in {office}: how fast is it replaced?", None),
    ("travel insurance", "Business travellers from {office} are covered by travel insurance up to {n} thousand "
     "euros for medical costs.", "What medical costs does travel insurance cover for {office} staff?", None),
    ("parental leave", "Parents at the {office} office receive {n} weeks of paid parental leave.",
     "How many weeks of paid leave do new parents get in {office}?", "Baby on the way in {office}: time off?"),
    ("expense reimbursement", "Expenses of {office} employees are reimbursed within {n} days of an approved "
     "claim.", "When are expenses reimbursed for people in {office}?", None),
    ("desk booking", "Desks in {office} are booked through the booking tool at most {n} days ahead.",
     "How far ahead can I book a desk in {office}?", None),
    ("fire drills", "The {office} office runs a fire drill every {n} months; wardens wear yellow vests.",
     "How often are fire drills held in {office}?", None),
    ("visitor badges", "Visitors to the {office} office collect a visitor badge at reception; badges expire "
     "after {n} hours.", "When does a visitor's badge expire in {office}?", None),
    ("bike storage", "The {office} office has {n} secured bike racks in the basement storage room.",
     "Is there storage for bikes at {office}?", "Where can I leave my bicycle in {office}?"),
    ("mentoring programme", "New hires in {office} join a mentoring programme lasting {n} months.",
     "How long is the mentoring programme for new hires in {office}?", None),
    ("server maintenance", "Servers hosted in {office} go down for maintenance on the {n}th of each month.",
     "Which day is the monthly server maintenance in {office}?", None),
    ("language courses", "The {office} office pays for {n} hours of language courses per year.",
     "How many hours of language courses are paid in {office}?", None),
    ("gym membership", "Staff in {office} get a gym membership subsidy of {n} euros a month.",
     "What is the gym subsidy for {office}?", "Does the company help pay for fitness in {office}?"),
    ("overtime pay", "Overtime worked in {office} is paid at {n} percent of the hourly rate.",
     "What is overtime paid at in {office}?", None),
    ("remote work", "Employees in {office} may work remotely up to {n} days a week.",
     "How many days a week can {office} staff work from home remotely?", None),
    ("coffee machines", "The coffee machines in {office} are descaled every {n} weeks by the kitchen team.",
     "How often are the coffee machines descaled in {office}?", None),
    ("security training", "Everyone in {office} completes security training every {n} months.",
     "How often must {office} employees repeat the security training?", None),
    ("mail room", "The {office} mail room opens at {n} o'clock and sorts parcels before noon.",
     "What time does the mail room open in {office}?", "When can I pick up my parcels in {office}?"),
    ("printer quotas", "Each person in {office} may print {n} pages a month before the quota applies.",
     "What is the printing quota in {office}?", None),
    ("holiday calendar", "The {office} holiday calendar lists {n} public holidays this year.",
     "How many public holidays does the {office} calendar have?", None),
    ("relocation support", "Staff relocating to {office} receive a relocation allowance of {n} thousand euros.",
     "How much is the relocation allowance for moving to {office}?", None),
    ("meeting rooms", "Meeting rooms in {office} hold up to {n} people and are booked in the calendar.",
     "How many people fit in the meeting rooms of {office}?", None),
]
BOILERPLATE = (
    "This page is part of the employee handbook. Policies apply to all employees, contractors and interns "
    "unless a local agreement says otherwise. Questions about this policy go to your manager or to the people "
    "team. The handbook is reviewed every year and changes are announced on the intranet. ")
QUESTIONS = 50


def handbook() -> tuple[dict[str, str], list[tuple[str, str]]]:
    """(document name -> text, [(question, the name of the document that answers it)])."""
    rng = random.Random(7)
    documents, questions = {}, []
    for subject, fact, question, paraphrase in SUBJECTS:
        for office in OFFICES:
            name = f"{subject.replace(' ', '-')}-{office.lower()}.md"
            detail = fact.format(office=office, n=rng.randint(2, 30))
            documents[name] = f"# {subject.capitalize()} ({office})\n\n{BOILERPLATE * 2}\n\n{detail}\n\n{BOILERPLATE}"
            questions.append((paraphrase or question, office, name))
    picked = rng.sample(questions, QUESTIONS)
    return documents, [(text.format(office=office), name) for text, office, name in picked]


# --- the child: one database --------------------------------------------------------------------


def child(database_url: str, redis_url: str, args: argparse.Namespace) -> dict[str, Any]:
    os.environ.update(DATABASE_URL=database_url, REDIS_URL=redis_url, CELERY_BROKER_URL=redis_url,
                      DJANGO_SETTINGS_MODULE="project.settings", LOG_LEVEL="WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", "--noinput", verbosity=0)
    from responses_app.tenancy.api_keys import create_api_key
    from responses_app.vector_stores import ingest

    ingest.send_ingest_task = lambda store_file_id: None  # the bench ingests each file itself
    tenant = create_api_key(f"bench-vector-stores-{os.getpid()}")[0].tenant
    return {"quality": quality(tenant), "ingest": ingest_speed(tenant, args.ingest_files),
            "search": search_speed(tenant, args.chunks, args.queries)}


def new_store(tenant: Any, name: str) -> Any:
    from responses_app.vector_stores.requests import parse_vector_store_create
    from responses_app.vector_stores.store import create_vector_store

    return create_vector_store(tenant, parse_vector_store_create({"name": name}))


def add_files(tenant: Any, store: Any, documents: dict[str, str]) -> list[int]:
    """The documents uploaded and attached (not yet ingested): their vector store file ids."""
    from django.core.files.base import ContentFile

    from responses_app.files.store import create_file
    from responses_app.models import VectorStoreFile
    from responses_app.vector_stores.requests import parse_file_create
    from responses_app.vector_stores.store import attach_file

    for name, text in documents.items():
        stored = create_file(tenant, ContentFile(text.encode(), name=name), name, "assistants", None)
        attach_file(tenant, store.pk, parse_file_create({"file_id": stored.pk}))
    return list(VectorStoreFile.objects.filter(vector_store=store).values_list("pk", flat=True))


def quality(tenant: Any) -> dict[str, Any]:
    """recall@5 and MRR of the handbook's questions for each ranking: words only, meaning
    only, and both fused (the default, hybrid)."""
    from responses_app.models import VectorStore
    from responses_app.vector_stores import ingest
    from responses_app.wire.search_options import Ranking

    documents, questions = handbook()
    store = new_store(tenant, "handbook")
    for pk in add_files(tenant, store, documents):
        ingest.ingest(pk)
    store = VectorStore.objects.get(pk=store.pk)
    figures = {"documents": len(documents), "questions": len(questions), "chunks": store.chunk_count,
               "embedding_model": store.embedding_model}
    for name, (embedding_weight, text_weight) in RANKINGS.items():
        figures[name] = ranked_quality(store, questions, Ranking(0.0, embedding_weight, text_weight))
    return figures


def ranked_quality(store: Any, questions: list[tuple[str, str]], ranking: Any) -> dict[str, float]:
    from responses_app.vector_stores.search import search

    found, reciprocal = 0, 0.0
    for question, answer in questions:
        files: list[str] = []
        for result in search([store], [question], None, 50, ranking):
            if result.vector_store_file.file.filename not in files:
                files.append(result.vector_store_file.file.filename)
        found += answer in files[:5]
        reciprocal += 1 / (files.index(answer) + 1) if answer in files else 0
    return {"recall_at_5": found / len(questions), "mrr": reciprocal / len(questions)}


def ingest_speed(tenant: Any, files: int) -> dict[str, Any]:
    """Chunks per second, for a store without an embedding model (the lexical index only)
    and for one with the default model (its vectors too)."""
    from responses_app.models import VectorStore
    from responses_app.vector_stores import ingest

    rng = random.Random(11)
    words = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('bcdfghklmnprstvz')}"
             f"{rng.choice('aeiou')}{n}" for n in range(5000)]
    figures: dict[str, Any] = {"files": files}
    for name in ("lexical", "hybrid"):
        # Files of about 3,000 tokens: 7 chunks each at the auto strategy (800 tokens, 400 overlap).
        documents = {f"doc-{n}.txt": " ".join(rng.choices(words, k=1500)) for n in range(files)}
        store = new_store(tenant, f"ingest-{name}")
        if name == "lexical":
            VectorStore.objects.filter(pk=store.pk).update(embedding_model="")
        pending = add_files(tenant, store, documents)
        wall, cpu = time.perf_counter(), time.process_time()
        for pk in pending:
            ingest.ingest(pk)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        chunks = VectorStore.objects.get(pk=store.pk).chunk_count
        figures[name] = {"chunks": chunks, "chunks_per_s": chunks / wall, "chunks_per_cpu_s": chunks / cpu}
    return figures


def search_speed(tenant: Any, chunks: int, queries: int) -> dict[str, Any]:
    from django.db import connection, transaction

    from responses_app.embeddings.registry import embedding_model
    from responses_app.models import StoredFile, VectorStore, VectorStoreFile
    from responses_app.vector_stores import indexing
    from responses_app.vector_stores.analysis import terms
    from responses_app.vector_stores.search import search
    from responses_app.wire.search_options import Ranking

    rng = random.Random(13)
    vocabulary = [f"{rng.choice('bcdfghklmnprstvz')}{rng.choice('aeiou')}{rng.choice('bcdfghklmnprstvz')}"
                  f"{rng.choice('aeiou')}{rng.choice('bcdfghklmnprstvz')}{n}" for n in range(30000)]
    weights = [1 / (rank + 1) for rank in range(len(vocabulary))]  # Zipf's law
    store = new_store(tenant, "search")
    model = embedding_model(store.embedding_model) if store.embedding_model else None
    per_file, built = 500, time.perf_counter()
    for first in range(0, chunks, per_file):
        row = StoredFile.objects.create(tenant=tenant, filename=f"part-{first}.txt", purpose="assistants", bytes=1,
                                        storage_name="none")
        store_file = VectorStoreFile.objects.create(vector_store=store, file=row, status="completed",
                                                    max_chunk_size_tokens=800, chunk_overlap_tokens=400)
        pieces = []
        for _ in range(min(per_file, chunks - first)):
            text = " ".join(rng.choices(vocabulary, weights, k=150))
            pieces.append((text, terms(text)))
        vectors = model.embed([text for text, _ in pieces]) if model else None
        with transaction.atomic():
            indexing.add_chunks(store_file, pieces, vectors)
    built = time.perf_counter() - built
    if connection.vendor == "postgresql":
        # What autovacuum does soon after a bulk load (visibility map, hint bits, statistics):
        # without it the first searches pay for it, and the figures are those of the load.
        with connection.cursor() as cursor:
            cursor.execute("VACUUM ANALYZE responses_app_vectorstorechunk")
    store = VectorStore.objects.get(pk=store.pk)
    samples = [" ".join(rng.choices(vocabulary, weights, k=rng.randint(2, 5))) for _ in range(queries)]
    figures: dict[str, Any] = {"chunks": store.chunk_count, "build_s": built, "queries": queries}
    for name, (embedding_weight, text_weight) in RANKINGS.items():
        ranking = Ranking(0.0, embedding_weight, text_weight)
        warm = time.perf_counter()  # the first query reads the index (and the vectors) into memory
        search([store], [samples[0]], None, 10, ranking)
        times = []
        for query in samples:
            start = time.perf_counter()
            search([store], [query], None, 10, ranking)
            times.append((time.perf_counter() - start) * 1000)
        times.sort()
        figures[name] = {"first_ms": (time.perf_counter() - warm) * 1000 - sum(times),
                         "p50_ms": statistics.median(times), "p95_ms": times[int(len(times) * 0.95) - 1]}
    return figures


# --- the parent ---------------------------------------------------------------------------------


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--databases", default="postgresql,sqlite", type=lambda s: s.split(","))
    parser.add_argument("--chunks", type=int, default=100_000, help="chunks in the store that search is timed on")
    parser.add_argument("--queries", type=int, default=200, help="searches timed")
    parser.add_argument("--ingest-files", type=int, default=150, help="files ingested for the ingest speed")
    parser.add_argument("--child", nargs=2, metavar=("DATABASE_URL", "REDIS_URL"), help=argparse.SUPPRESS)
    return parser.parse_args()


def main() -> str:
    args = parse_args()
    if args.child:
        print(json.dumps(child(*args.child, args)))
        return ""
    results = {}
    for database, figures in per_database(SERVICES_DIR, args.databases, __file__, [
            "--chunks", str(args.chunks), "--queries", str(args.queries), "--ingest-files", str(args.ingest_files)]):
        results[database] = figures
        quality_, ingest_, search_ = figures["quality"], figures["ingest"], figures["search"]
        print(f"{database}: quality: {quality_['documents']} documents ({quality_['chunks']} chunks), "
              f"{quality_['questions']} questions, embedding model {quality_['embedding_model'] or 'none'}", flush=True)
        for name in RANKINGS:
            print(f"{database}:   {name:8} recall@5 {quality_[name]['recall_at_5']:.2f}, "
                  f"MRR {quality_[name]['mrr']:.2f}", flush=True)
        for name in ("lexical", "hybrid"):
            ingested = ingest_[name]
            print(f"{database}: ingest ({name}): {ingested['chunks']} chunks of {ingest_['files']} files: "
                  f"{ingested['chunks_per_s']:.0f} chunks/s, {ingested['chunks_per_cpu_s']:.0f} chunks per CPU "
                  "second", flush=True)
        print(f"{database}: search: {search_['chunks']} chunks (built in {search_['build_s']:.0f} s), "
              f"{search_['queries']} queries each", flush=True)
        for name in RANKINGS:
            timed = search_[name]
            print(f"{database}:   {name:8} p50 {timed['p50_ms']:.1f} ms, p95 {timed['p95_ms']:.1f} ms "
                  f"(first query {timed['first_ms']:.0f} ms)", flush=True)
    first = next(iter(results.values()))
    return (f"vector_stores: recall@5 {first['quality']['lexical']['recall_at_5']:.2f} lexical, "
            f"{first['quality']['hybrid']['recall_at_5']:.2f} hybrid; ingest "
            f"{first['ingest']['lexical']['chunks_per_s']:.0f} chunks/s lexical, "
            f"{first['ingest']['hybrid']['chunks_per_s']:.0f} hybrid; search p50 "
            f"{first['search']['lexical']['p50_ms']:.1f} ms lexical, {first['search']['hybrid']['p50_ms']:.1f} hybrid")

if __name__ == "__main__":
    line = main()
    if line:
        print(line, flush=True)
