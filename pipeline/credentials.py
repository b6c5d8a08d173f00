"""What an environment variable's name says it holds: a sensitive credential, an API token, or configuration.

Core: the analyser classifies the variables a source reads, and the Security Hygiene rules rank the ones a server
requires, from the same definitions. Seed 000 weighs database passwords and cloud keys above API tokens; a database
URL or connection string carries its password, so it is sensitive too, never "configuration" for being a *_URL
(deviations 6 and 52).
"""

from __future__ import annotations

import re
from typing import Literal

CredentialKind = Literal["sensitive", "token"]

_DATABASE = (r"DATABASE|DB|POSTGRES|POSTGRESQL|PG|MYSQL|MARIADB|MONGO|MONGODB|REDIS|MSSQL|SQLSERVER|ORACLE|NEO4J|CLICKHOUSE"
             r"|SNOWFLAKE|COUCHBASE|CASSANDRA|ELASTICSEARCH|SQL|SUPABASE_DB|TURSO|LIBSQL|AMQP|RABBITMQ|KAFKA")
SENSITIVE_CREDENTIAL = re.compile(
    rf"(^|_)({_DATABASE})(_[A-Z0-9]+)*_(URL|URI|DSN|CONNECTION|CONNECTION_STRING|CONN|CONN_STR|CONN_STRING)$"
    r"|(^|_)(DSN|CONNECTION_STRING|CONN_STR|CONN_STRING)$"
    r"|PASSWORD|PASSWD|PASSPHRASE|(^|_)(PWD|PASS)$"
    r"|PRIVATE_KEY|(^|_)SSH_KEY"
    r"|^AWS_(SECRET_ACCESS_KEY|ACCESS_KEY_ID|SESSION_TOKEN)$|^AWS_SECRET"
    r"|GOOGLE_APPLICATION_CREDENTIALS|SERVICE_ACCOUNT|^(GCP|GCLOUD|GOOGLE_CLOUD)_\w*(KEY|CREDENTIALS|SECRET)"
    r"|^AZURE_\w*(SECRET|STORAGE\w*KEY|CONNECTION_STRING)|^(ALIBABA|ALIYUN|ALICLOUD)_\w*SECRET",
    re.I,
)
_TOKEN_PARTS = {"KEY", "APIKEY", "TOKEN", "SECRET", "CREDENTIAL", "CREDENTIALS", "AUTH", "BEARER", "COOKIE", "JWT", "PAT", "SESSION"}
# A last word that makes a name a setting about a credential, not the credential (AUTH_MODE, TOKEN_ENDPOINT, KEY_PATH is
# a path to a key file: still a pointer to a secret, see below).
_SETTING_SUFFIXES = {"TYPE", "MODE", "METHOD", "ENABLED", "DISABLED", "HOST", "PORT", "TIMEOUT", "LEVEL", "REGION", "ENDPOINT",
                     "URL", "URI", "HEADER", "NAME", "SCOPE", "SCOPES", "TTL", "EXPIRY", "EXPIRES", "PROVIDER", "STRATEGY"}
CONFIGURATION = re.compile(r"^(PORT|HOST|HOSTNAME|LOG_LEVEL|LOGLEVEL|DEBUG|NODE_ENV|ENV|TZ|LANG|TIMEOUT"
                           r"|.*_(PORT|HOST|TIMEOUT|LEVEL|DIR|PATH|MODE|REGION|URL))$", re.I)


def credential_kind(name: str) -> CredentialKind | None:
    """"sensitive" (database URLs and passwords, cloud keys, private keys), "token" (API keys and tokens), or None."""
    upper = name.strip().upper()
    if not upper:
        return None
    if SENSITIVE_CREDENTIAL.search(upper):
        return "sensitive"
    parts = [p for p in re.split(r"[^A-Z0-9]+", upper) if p]
    if not parts or parts[-1] in _SETTING_SUFFIXES:
        return None
    if any(p in _TOKEN_PARTS for p in parts) or parts[-1].endswith(("KEY", "TOKEN", "SECRET")):
        return "token"
    return None


def is_configuration(name: str) -> bool:
    """PORT, HOST, LOG_LEVEL and the like: seed 000's High Config Demand leaves them out. A credential never is."""
    return credential_kind(name) is None and bool(CONFIGURATION.match(name))
