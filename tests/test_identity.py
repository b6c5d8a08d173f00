"""URL normalisation and catalog ids: every spelling of a repository gives one key (property tests)."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pipeline.identity import RepoRef, normalise_url, parse_github, remote_key, repository_key, slug_id, with_hash

owners = st.from_regex(r"[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,20}", fullmatch=True).filter(
    lambda o: o.lower() not in {"topics", "orgs", "search", "users", "features", "apps", "settings", "sponsors", "marketplace", "explore",
                                "collections", "trending", "about", "contact", "pricing", "login", "new", "notifications", "site",
                                "events", "enterprise", "organizations", "issues", "pulls"})
repos = st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,30}", fullmatch=True).filter(lambda r: not r.lower().endswith(".git") and r not in (".", ".."))
paths = st.lists(st.from_regex(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,12}", fullmatch=True), min_size=1, max_size=3)
ID = re.compile(r"^[a-z0-9][a-z0-9._-]{0,127}$")


def spellings(owner: str, repo: str) -> list[str]:
    """The ways the sources write one repository URL (fixtures README: case, .git, slash, www, http, fragment)."""
    return [
        f"https://github.com/{owner}/{repo}",
        f"https://github.com/{owner.upper()}/{repo.upper()}",
        f"https://github.com/{owner}/{repo}.git",
        f"https://github.com/{owner}/{repo}/",
        f"http://www.github.com/{owner}/{repo}",
        f"https://github.com/{owner}/{repo}#readme",
        f"https://github.com/{owner}/{repo}?tab=readme",
        f"git+https://github.com/{owner}/{repo}.git",
        f"git@github.com:{owner}/{repo}.git",
        f"github.com/{owner}/{repo}",
        f" <https://github.com/{owner}/{repo}> ",
        f"https://github.com/{owner}/{repo}/issues",
        f"https://github.com/{owner}/{repo}/tree/main",
    ]


@given(owners, repos)
def test_every_spelling_of_a_repository_gives_one_key(owner, repo):
    keys = {repository_key(url) for url in spellings(owner, repo)}
    assert keys == {f"github:{owner.lower()}/{repo.lower()}"}


@given(owners, repos, paths, st.sampled_from(["main", "master", "HEAD", "v1.2"]))
def test_tree_links_keep_the_subpath_as_a_separate_attribute(owner, repo, path, branch):
    sub = "/".join(path)
    ref = parse_github(f"https://github.com/{owner}/{repo}/tree/{branch}/{sub}/")
    assert ref == RepoRef(owner.lower(), repo.lower(), sub)
    assert ref.repo_key == f"github:{owner.lower()}/{repo.lower()}"  # monorepo servers stay linked by repo
    assert ref.key != ref.repo_key  # ... but distinct as servers
    blob = parse_github(f"https://github.com/{owner}/{repo}/blob/{branch}/{sub}/README.md")
    assert blob.subpath == sub  # a file link names its folder
    assert parse_github(f"https://github.com/{owner}/{repo}", subfolder=f"/{sub}/").subpath == sub  # the registry's subfolder


@given(owners, repos)
def test_normalising_is_idempotent_and_the_url_round_trips(owner, repo):
    ref = parse_github(f"https://GitHub.com/{owner}/{repo}.git/")
    assert parse_github(ref.url) == ref
    assert ref.url == f"https://github.com/{owner.lower()}/{repo.lower()}"


@given(st.text(max_size=60))
def test_arbitrary_text_never_raises_and_ids_are_always_valid(text):
    parse_github(text)
    normalise_url(text)
    key = repository_key(text) or remote_key(text) or f"awesome-mcp-servers:{text}"
    assert ID.match(slug_id(key))
    assert ID.match(with_hash(slug_id(key), key))


@pytest.mark.parametrize("url", [
    "https://gitlab.com/owner/repo", "https://github.com/topics/mcp", "https://github.com/owner", "https://github.com/",
    "https://docs.example.com/github.com/o/r", "javascript:alert(1)", "", None, 42,
])
def test_what_is_not_a_github_repository(url):
    assert parse_github(url) is None


def test_non_github_repositories_and_remotes_get_their_own_keys():
    assert repository_key("https://gitlab.com/Owner/Repo/") == "repo:gitlab.com/Owner/Repo"
    assert remote_key("HTTPS://Mcp.Example.com:443/sse/?key=x#f") == remote_key("https://mcp.example.com/sse") == "remote:https://mcp.example.com/sse"
    assert remote_key("http://mcp.example.com:8080/mcp") == "remote:http://mcp.example.com:8080/mcp"
    assert remote_key("ftp://x") is None and remote_key("not a url") is None


def test_renames_are_followed():
    archived = parse_github("https://github.com/modelcontextprotocol/servers/tree/main/src/postgres").renamed({})
    assert archived == RepoRef("modelcontextprotocol", "servers-archived", "src/postgres")
    kept = parse_github("https://github.com/modelcontextprotocol/servers/tree/main/src/fetch").renamed({})
    assert kept.repo_key == "github:modelcontextprotocol/servers"  # still maintained there
    aliases = {"github:jlowin/fastmcp": "github:prefecthq/fastmcp", "github:a/loop": "github:b/loop", "github:b/loop": "github:a/loop"}
    assert parse_github("https://github.com/jlowin/FastMCP").renamed(aliases).repo_key == "github:prefecthq/fastmcp"
    assert parse_github("https://github.com/a/loop").renamed(aliases).repo_key in {"github:a/loop", "github:b/loop"}  # a loop ends


def test_ids_are_readable_and_distinct():
    assert slug_id("github:brave/brave-search-mcp-server") == "brave--brave-search-mcp-server"
    assert slug_id("github:modelcontextprotocol/servers#src/fetch") == "modelcontextprotocol--servers--src--fetch"
    assert slug_id("registry:io.github.x/y") == "registry--io.github.x--y"
    assert slug_id("remote:https://mcp.example.com/sse") == "remote--mcp.example.com--sse"
    long = slug_id("github:o/" + "r" * 100 + "#" + "p/" * 30)
    assert ID.match(long) and len(long) <= 128
