"""A real PostgreSQL server for the store's tests: Debian's ``postgresql`` package (installed with
apt-get when root and missing), a cluster made by ``initdb`` in a temporary folder, started by
``pg_ctl`` on 127.0.0.1 at a free port with a password login, and stopped at the end. initdb
refuses root, so as root the cluster runs as the package's ``postgres`` user."""

from __future__ import annotations

import os
import pwd
import secrets
import shutil
import socket
import subprocess
from dataclasses import dataclass
from pathlib import Path


def binaries() -> Path | None:
    """The folder of the newest installed server's programs, if any."""
    dirs = sorted(Path("/usr/lib/postgresql").glob("*/bin"), reverse=True)
    found = [d for d in dirs if (d / "pg_ctl").exists() and (d / "initdb").exists()]
    return found[0] if found else None


def install() -> None:
    """Debian's server package, non-interactively (the tests start their own cluster)."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-q"], ["apt-get", "install", "-y", "-q", "postgresql"]):
        done = subprocess.run(command, env=env, capture_output=True, text=True, timeout=900)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command)}: {done.stderr[-1500:]}")


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass
class Server:
    lab: Path
    bin: Path
    port: int
    password: str
    user: list[str]
    """The command prefix that runs a program as the cluster's owner."""

    @classmethod
    def start(cls, lab: Path) -> Server:
        if binaries() is None:
            install()
        bin_dir = binaries()
        if bin_dir is None:
            raise RuntimeError("apt-get installed postgresql, yet no /usr/lib/postgresql/*/bin/pg_ctl")
        user: list[str] = []
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            os.chown(lab, owner.pw_uid, owner.pw_gid)
            user = ["runuser", "-u", "postgres", "--"]
        server = cls(lab, bin_dir, free_port(), secrets.token_hex(16), user)
        secret = lab / "password"
        secret.write_text(server.password)
        if user:
            os.chown(secret, owner.pw_uid, owner.pw_gid)
        data = lab / "data"
        server.run("initdb", "-D", str(data), "-U", "memops", "--auth=scram-sha-256", f"--pwfile={secret}")
        secret.unlink()
        options = f"-c listen_addresses=127.0.0.1 -c port={server.port} -c unix_socket_directories={lab}"
        server.run("pg_ctl", "-D", str(data), "-l", str(lab / "server.log"), "-o", options, "-w", "start")
        return server

    def run(self, program: str, *args: str) -> None:
        command = [*self.user, str(self.bin / program), *args]
        done = subprocess.run(command, capture_output=True, text=True, timeout=300)
        if done.returncode != 0:
            raise RuntimeError(f"{program}: {(done.stdout + done.stderr)[-1500:]}")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://memops:{self.password}@127.0.0.1:{self.port}/{database}"

    def database(self, name: str) -> str:
        """A new, empty database on the server; its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        self.run("pg_ctl", "-D", str(self.lab / "data"), "-m", "fast", "-w", "stop")
        shutil.rmtree(self.lab, ignore_errors=True)
