"""One server's rows the database refuses: none of them is written, the refusal names the server, and the stage goes on.

A refusal is about the data (a value SQLite cannot hold, a constraint or trigger it breaks). A database that
cannot be written at all (a full disk, a corrupt file, a lock held too long) still stops the stage, as before.
"""

from __future__ import annotations

import sqlite3
from contextlib import contextmanager
from typing import Iterator

from sqlite_utils import Database

from pipeline.clean import clean_text

# ValueError covers text that cannot be encoded and JSON that cannot be serialised; RecursionError, evidence nested too deep.
DATA_ERRORS = (sqlite3.DataError, sqlite3.IntegrityError, sqlite3.InterfaceError, ValueError, OverflowError, RecursionError)


class WriteRefused(Exception):
    def __init__(self, server_id: str, cause: BaseException) -> None:
        self.server_id = server_id
        super().__init__(f"not stored: the database refused its rows ({type(cause).__name__}: {clean_text(str(cause), 300)})")


@contextmanager
def one_server(db: Database, server_id: str) -> Iterator[None]:
    """A transaction (a savepoint inside one) for one server's rows: on a refusal it rolls them back and raises WriteRefused."""
    try:
        with db.atomic():
            yield
    except DATA_ERRORS as exc:
        raise WriteRefused(server_id, exc) from exc
