"""The memory behind HTTP: memops serve --store outputs/memory.db

Serves one namespace of an SQLite store (``open_memory``'s store) on 127.0.0.1 with FastAPI:
``POST /notes``, ``GET /keys``, ``GET /keys/{entity}/{slot}`` (with its history), ``GET
/snapshot``, ``GET /contested``, ``GET /find``, ``POST /retract``, ``POST /resolve``, ``POST
/drop-scope``; the OpenAPI pages at ``/docs``. Every call needs ``Authorization: Bearer <key>``:
the key in ``MEMOPS_API_KEY``, or one made now and written (readable by you alone) to
``--key-file``. Without adapters the memory takes notes with their claims given and the rules
decide; ``--engine learned --adapters <fold>`` reads notes with learned extraction. ``--mcp``
serves the same calls as MCP tools over stdin and stdout, for a coding agent to launch.

    memops serve --store outputs/memory.db --catalog python-project
    memops serve --mcp --store outputs/memory.db          # in an agent's MCP server list
    curl -H "Authorization: Bearer $(cat outputs/memory.db.key)" localhost:8765/keys
"""

from __future__ import annotations

import argparse
import os
import secrets
import sys
from pathlib import Path

from memops.operators.backends import BackendError
from memops.operators.backends.endpoint import add_endpoint_arguments
from memops.operators.learned import EXTRACT_MODES, add_decisions_argument
from memops.track.database import is_server, store_path
from memops.track.memory import InputError
from memops.track.opening import open_memory
from memops.track.store import DEFAULT_NAMESPACE


def api_key(key_file: Path) -> str:
    """``MEMOPS_API_KEY``, or a new key written to ``key_file`` (mode 0600), never printed."""
    if key := os.environ.get("MEMOPS_API_KEY"):
        return key
    key = secrets.token_urlsafe(24)
    key_file.parent.mkdir(parents=True, exist_ok=True)
    fresh = key_file.with_name(f".{key_file.name}.{secrets.token_hex(4)}")
    # Created readable by its owner alone, then moved into place: no moment where others may read it.
    with os.fdopen(os.open(fresh, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "w") as out:
        out.write(key + "\n")
    fresh.replace(key_file)
    return key


def main() -> None:
    parser = argparse.ArgumentParser(
        prog="memops serve", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--store",
        default="outputs/memory.db",
        help="an SQLite file (or sqlite:///path), or a PostgreSQL server (postgresql://user:password@host/db)",
    )
    parser.add_argument("--namespace", default=DEFAULT_NAMESPACE, help="the repository or tenant served")
    parser.add_argument(
        "--catalog", help="the slot catalog notes are read against (a YAML, or python-project)"
    )
    parser.add_argument("--engine", default="symbolic", choices=("symbolic", "learned", "hybrid"))
    parser.add_argument("--adapters", type=Path, help="a fold's adapters, for --engine learned or hybrid")
    parser.add_argument("--model", default="tiny", help="the base the adapters were trained on")
    parser.add_argument("--backend", default="hf", choices=("hf", "vllm"))
    parser.add_argument("--extract", default="two-stage-overlap", choices=EXTRACT_MODES)
    add_decisions_argument(parser)
    parser.add_argument(
        "--host", default="127.0.0.1", help="the address to listen on (default: this machine only)"
    )
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument(
        "--key-file",
        type=Path,
        help="where a new key is written (default: <store>.key; outputs/serve.key for a PostgreSQL store)",
    )
    parser.add_argument(
        "--mcp", action="store_true", help="speak MCP over stdin and stdout instead (for a coding agent)"
    )
    add_endpoint_arguments(parser)
    parser.add_argument("overrides", nargs="*", help="overrides of the model and backend (model.path=...)")
    args = parser.parse_intermixed_args()

    try:
        path = store_path(args.store)
        with open_memory(
            args.engine,
            adapters=args.adapters,
            backend=args.backend,
            model=args.model,
            extract=args.extract,
            decisions=args.decisions,
            catalog=args.catalog,
            store=args.store,
            namespace=args.namespace,
            overrides=args.overrides,
            endpoint=args.endpoint,
            models=args.endpoint_model,
        ) as memory:
            if args.mcp:
                from memops.track.agent_tools import make_tools

                print(f"memops serve: {path} [{args.namespace}] over MCP on stdio", file=sys.stderr)
                make_tools(memory).run("stdio")
                return
            import uvicorn

            from memops.track.server import make_app

            key_file = args.key_file or Path("outputs/serve.key" if is_server(args.store) else f"{path}.key")
            key = api_key(key_file)
            where = "MEMOPS_API_KEY" if os.environ.get("MEMOPS_API_KEY") else key_file
            print(f"memops serve: {path} [{args.namespace}] on http://{args.host}:{args.port} (key: {where})")
            uvicorn.run(make_app(memory, key), host=args.host, port=args.port, log_level="warning")
    except (BackendError, InputError, OSError) as exc:
        sys.exit(f"memops serve: {exc}")


if __name__ == "__main__":
    main()
