"""Mock environment values: plausible shapes, registry defaults, bounded untrusted names, nothing from the real environment."""

from __future__ import annotations

import re
from datetime import datetime, timezone

from pipeline.models import EnvVar, LaunchSpec, Server
from pipeline.sandbox.mockenv import MAX_VARIABLES, mock_environment, mock_value

NOW = datetime(2026, 7, 1, tzinfo=timezone.utc)


def test_values_are_shaped_like_the_real_thing():
    mocks = mock_environment([EnvVar(name=n, secret=True) for n in (
        "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "GITHUB_PERSONAL_ACCESS_TOKEN", "SLACK_BOT_TOKEN", "STRIPE_SECRET_KEY", "BRAVE_API_KEY")]
        + [EnvVar(name=n) for n in ("DATABASE_URL", "MYSQL_URL", "MONGODB_URI", "REDIS_URL", "API_BASE_URL", "POSTGRES_PORT", "ALLOWED_DIR",
                                    "ENABLE_WRITES", "READ_ONLY", "SMTP_HOST", "JIRA_EMAIL", "AWS_REGION")])
    assert mocks["OPENAI_API_KEY"].startswith("sk-") and len(mocks["OPENAI_API_KEY"]) > 40
    assert mocks["ANTHROPIC_API_KEY"].startswith("sk-ant-")
    assert re.fullmatch(r"ghp_[A-Za-z0-9]{36}", mocks["GITHUB_PERSONAL_ACCESS_TOKEN"])
    assert mocks["SLACK_BOT_TOKEN"].startswith("xoxb-") and mocks["STRIPE_SECRET_KEY"].startswith("sk_test_")
    assert mocks["BRAVE_API_KEY"].startswith("mock-")
    assert mocks["DATABASE_URL"] == "postgres://mock:mock@127.0.0.1:5432/mock"
    assert mocks["MYSQL_URL"].startswith("mysql://") and mocks["MONGODB_URI"].startswith("mongodb://") and mocks["REDIS_URL"].startswith("redis://")
    assert all("@127.0.0.1:" in mocks[n] for n in ("DATABASE_URL", "MYSQL_URL", "MONGODB_URI", "REDIS_URL"))
    assert mocks["API_BASE_URL"] == "http://127.0.0.1:9/" and mocks["POSTGRES_PORT"] == "5432"
    assert mocks["ALLOWED_DIR"] == "{workdir}/allowed_dir"
    assert mocks["ENABLE_WRITES"] == "false" and mocks["READ_ONLY"] == "true"
    assert mocks["SMTP_HOST"] == "127.0.0.1" and mocks["JIRA_EMAIL"].endswith(".invalid") and mocks["AWS_REGION"] == "us-east-1"
    assert mock_environment([EnvVar(name="OPENAI_API_KEY", secret=True)]) == {"OPENAI_API_KEY": mocks["OPENAI_API_KEY"]}  # the same every run


def test_registry_fields_decide_what_is_mocked():
    mocks = mock_environment([
        EnvVar(name="LOG_LEVEL", required=False, default="info"),  # a default is used as given
        EnvVar(name="OPTIONAL_TOKEN", secret=True, required=False),  # optional and no default: left unset
        EnvVar(name="WORKSPACE", required=True, format="filepath"),
        EnvVar(name="MAX_RESULTS", required=True, format="number"),
        EnvVar(name="FEATURE", required=True, format="boolean"),
        EnvVar(name="HOSTILE_DEFAULT", default="a\x00b"),  # a default with a NUL is no default: mocked instead
        EnvVar(name="HUGE_DEFAULT", default="x" * 5000),
    ])
    assert mocks["LOG_LEVEL"] == "info" and "OPTIONAL_TOKEN" not in mocks
    assert mocks["WORKSPACE"].startswith("{workdir}/") and mocks["MAX_RESULTS"] == "1" and mocks["FEATURE"] == "false"
    assert "\x00" not in mocks["HOSTILE_DEFAULT"] and len(mocks["HUGE_DEFAULT"]) < 100


def test_untrusted_names_are_filtered_and_bounded():
    names = ["lower_case", "1STARTS_WITH_DIGIT", "HAS-DASH", "SPACE NAME", "NUL\x00NAME", "A" * 500, "PATH", "LD_PRELOAD", "HOME",
             "NODE_OPTIONS", "PYTHONPATH", "GOOD_NAME"] + [f"VAR_{i}" for i in range(500)]
    mocks = mock_environment([EnvVar(name=n) for n in names])
    assert "GOOD_NAME" in mocks and len(mocks) == MAX_VARIABLES
    assert all(re.fullmatch(r"[A-Z_][A-Z0-9_]*", name) for name in mocks)
    assert not {"PATH", "LD_PRELOAD", "HOME", "NODE_OPTIONS", "PYTHONPATH"} & set(mocks)


def test_a_server_readme_and_launch_values():
    server = Server(id="s", name="s", transport="stdio", first_seen_at=NOW, last_seen_at=NOW,
                    env_vars=[EnvVar(name="NOTION_TOKEN", secret=True), EnvVar(name="PORT")],
                    launch=LaunchSpec(registry="npm", package="p", transport="streamable-http", url="http://127.0.0.1:{port}/mcp",
                                      env={"PORT": "{port}"}))
    readme = "## Setup\n\n```\nexport TAVILY_API_KEY=your-key\nexport DATABASE_URL=postgres://...\n```\nSet NODE_ENV to production.\n"
    mocks = mock_environment(server, readme=readme)
    assert mocks["NOTION_TOKEN"].startswith("secret_") and "PORT" not in mocks  # the launch fixes PORT itself
    assert mocks["TAVILY_API_KEY"].startswith("tvly-") and mocks["DATABASE_URL"].startswith("postgres://")
    assert "NODE_ENV" not in mocks  # a README's other capitals are not requirements


def test_no_mock_comes_from_the_real_environment(monkeypatch):
    real = {"GITHUB_TOKEN": "ghp_REALrealREALrealREALrealREALreal1234", "SMITHERY_API_KEY": "smithery-real-key-0123456789abcdef",
            "OPENAI_API_KEY": "sk-proj-realrealrealrealrealrealrealrealreal", "DATABASE_URL": "postgres://admin:hunter2@db.internal:5432/prod",
            "AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"}
    for name, value in real.items():
        monkeypatch.setenv(name, value)
    mocks = mock_environment([EnvVar(name=n, secret=True) for n in real] + [EnvVar(name="HOME_DIR"), EnvVar(name="USER")])
    assert set(real) <= set(mocks)
    for value in mocks.values():
        assert all(secret not in value and value not in secret for secret in real.values())
    assert all(mock_value(name) != value for name, value in real.items())
