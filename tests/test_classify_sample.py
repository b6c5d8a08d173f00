"""Classification a reader would give (issue 17): a hand-labelled sample from the snapshots, the registry's
reverse-DNS scaffolding, and brand names that camelCase splitting used to break."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.classify import classify, heading_key, namespace, words
from pipeline.classify_vocabulary import HEADINGS
from pipeline.store.catalog import classification_of
from tests.support import SOURCE_FIXTURES, snapshot_catalog

SAMPLE = json.loads((Path(__file__).parent / "data" / "classification_sample.json").read_text())["servers"]
# The target is 90% on categories and on platform sets. Measured when the sample was last changed (categories,
# platform sets): batch a (150, the batch the keyword rules were first tuned on) 134 and 139; b-d (50 each) 44/49, 44/45,
# 41/45; e (50) 37 and 48, but 32 and 46 when measured blind (27 and 46 with the rules before the curated-heading round);
# f (50, measured blind once with the final rules) 36 and 47; all 400: 336 and 373 (main: 65 and 59 on batch a). The
# platform target is met on every batch; the category target is not: on unseen servers (e, f) about seven in ten are right.
FLOORS = {"a": (0.89, 0.92), "e": (0.74, 0.96), "f": (0.72, 0.94), "all": (0.84, 0.93)}


def _row(server: dict) -> dict:
    """A stored server row as the catalog's classification reads it (store.catalog.classification_of)."""
    fields = server["fields"]
    return {"name": fields["name"], "description": fields["description"], "repository": fields["repository"], "subpath": fields["subpath"],
            "registry_name": fields["registry_name"], "packages": json.dumps([{"identifier": p} for p in fields["packages"]]),
            "launch": json.dumps({"package": fields["launch_package"]}) if fields["launch_package"] else None,
            "source_categories": json.dumps(server["list_categories"])}


@pytest.mark.parametrize("batch", sorted(FLOORS))
def test_the_hand_labelled_sample_is_classified_as_a_reader_would(batch):
    servers = [s for s in SAMPLE if batch in ("all", s["batch"])]
    assert len(servers) >= 50 and {s["source"] for s in servers} == {"official-registry", "awesome-mcp-servers", "smithery",
                                                                      "best-of-mcp-servers", "docker-mcp-catalog"}
    categories = platforms = 0
    misses = []
    for server in servers:
        found = classification_of(_row(server))
        got_category, got_platforms = found["category"], sorted(json.loads(found["platforms"]))
        categories += got_category == server["expected_category"]
        platforms += got_platforms == server["expected_platforms"]  # exact set: no wrong platform and no missed one
        if got_category != server["expected_category"] or got_platforms != server["expected_platforms"]:
            misses.append(f"{server['source']}:{server['source_key']}: category {got_category} (expected {server['expected_category']}), "
                          f"platforms {got_platforms} (expected {server['expected_platforms']})")
    print(f"categories {categories}/{len(servers)}, platforms {platforms}/{len(servers)}", *misses, sep="\n")
    category_floor, platform_floor = FLOORS[batch]
    assert categories / len(servers) >= category_floor and platforms / len(servers) >= platform_floor


@pytest.mark.parametrize(("registry_name", "meaning"), [
    ("io.github.upstash/context7", "upstash"),  # a code host's domain: the owner is what it says
    ("io.github.github/github-mcp-server", "github"),  # ... which may itself be a brand
    ("ai.smithery/pinion05-supabase-mcp-lite", ""),  # a republisher's domain says only where a copy is hosted
    ("com.stackoverflow.mcp/mcp", "stackoverflow"),  # a vendor's domain, less generic labels
    ("dev.composio.rube/rube", "composio rube"),
    ("docker.io/aliengiraffe/spotdb:0.1.0", "aliengiraffe"),  # an image on a registry host: its owner
    ("@upstash/context7-mcp", "upstash"),  # an npm scope
    ("https://github.com/jkawamoto/mcp-bear/releases/download/v0.5.2/mcp-bear.mcpb", ""),  # a download URL
])
def test_only_the_meaningful_part_of_a_registry_namespace_is_read(registry_name, meaning):
    assert namespace(registry_name) == meaning


def test_the_io_github_prefix_is_not_a_topic():
    # real registry entries (official-registry snapshot): on main both were DevTools with a GitHub platform, from the prefix alone
    video = classify("Video Still Capture", "Capture still images from a video source", "https://github.com/13rac1/videocapture-mcp", None,
                     "io.github.13rac1/videocapture-mcp")
    assert "GitHub" not in video.platforms and video.category == "Media"
    florence = classify("io.github.jkawamoto/mcp-florence2", "An MCP server for processing images using Florence-2",
                        "https://github.com/jkawamoto/mcp-florence2", None, "io.github.jkawamoto/mcp-florence2")
    assert florence.category == "Media" and florence.platforms == ()
    # GitHub's own server keeps both: the owner and the name say GitHub
    github = classify("GitHub", "Connect AI assistants to GitHub - manage repos, issues, PRs", "https://github.com/github/github-mcp-server",
                      None, "io.github.github/github-mcp-server")
    assert github.category == "DevTools" and github.platforms == ("GitHub",)


@pytest.mark.parametrize(("text", "word", "label"), [
    ("Official GitHub server for repositories", "github", "GitHub"),
    ("Chat with OpenAI models", "openai", "OpenAI"),
    ("Query PostgreSQL databases", "postgresql", "PostgreSQL"),
    ("Search YouTube videos and transcripts", "youtube", "YouTube"),
    ("Post to LinkedIn", "linkedin", "LinkedIn"),
    ("Manage ClickUp tasks", "clickup", "ClickUp"),
    ("Use DeepSeek models", "deepseek", "DeepSeek"),
    ("Send WhatsApp messages", "whatsapp", "WhatsApp"),
    ("Query BigQuery tables", "bigquery", "BigQuery"),
])
def test_brand_names_survive_camel_case_splitting(text, word, label):
    assert word in words(text)
    assert label in classify("x", text, None, None, None).platforms


def test_camel_case_still_splits_ordinary_words_and_the_mcp_affix():
    assert words("GitHubMCPServer") == ["github", "mcp", "server"]
    assert words("getWeatherForecast") == ["get", "weather", "forecast"]
    assert words("discordmcp") == ["discord"]


def test_clients_examples_and_comparisons_are_not_platforms():
    # "for Claude" is the client; "apps like Gmail, Slack" are examples; "Firebase-like" is a comparison
    assert classify("discordmcp", "Discord MCP Server for Claude Integration", None, None, None).platforms == ("Discord",)
    assert classify("rube", "Connect your AI to 500+ apps like Gmail, Slack, GitHub, and Notion", None, None, "dev.composio.rube/rube"
                    ).platforms == ("Composio",)
    assert classify("Instant", "A modern Firebase-like database with instant sync", None, None, None).platforms == ()


@pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason="source snapshots absent")
def test_catalog_from_snapshots_reads_no_topic_from_registry_prefixes(tmp_path):
    db = snapshot_catalog(tmp_path / "c.db")
    rows = [dict(r) for r in db.query("select * from servers where registry_name like 'io.github.%'")]
    assert len(rows) > 1000
    only_from_prefix = 0
    for row in rows:
        with_prefix = classification_of(row)
        bare = dict(row, name=row["name"].removeprefix("io.github."), registry_name=row["registry_name"].removeprefix("io.github."))
        only_from_prefix += "GitHub" in json.loads(with_prefix["platforms"]) and "GitHub" not in json.loads(classification_of(bare)["platforms"])
    assert only_from_prefix == 0  # 1,033 on main


def test_a_curated_heading_counts_for_its_category_like_a_word_of_the_name():
    # a name and description that say nothing a keyword knows: the lists' heading decides
    assert classify("lumen", "Tools for lumen", None, None, None).category == "Other"
    assert classify("lumen", "Tools for lumen", None, None, None, ("Databases",)).category == "Database"
    assert classify("lumen", "Tools for lumen", None, None, None, ("finance-and-fintech", "Finance & Fintech")).category == "Finance"
    # headings that gather unlike servers name no category
    for vague in ("Other Tools and Integrations", "Aggregators", "devops", "productivity", "Knowledge & Memory"):
        assert classify("lumen", "Tools for lumen", None, None, None, (vague,)).category == "Other"
    # a heading weighs like the name: one heading does not beat a name and a description that agree on another category
    assert classify("postgres-mcp", "Query PostgreSQL databases", None, None, None, ("Developer Tools",)).category == "Database"
    assert heading_key("Biology, Medicine and Bioinformatics") == heading_key("Biology Medicine and Bioinformatics")
    assert heading_key("Search & Data Extraction") == "search and data extraction" and heading_key("web-scraping") == "web scraping"


def test_a_general_name_beside_a_product_names_the_product_and_packaging_is_no_platform():
    assert classify("git-tools", "Manage GitHub repositories and git history", None, None, None).platforms == ("GitHub",)
    assert classify("git-tools", "Read git history and diffs", None, None, None).platforms == ("Git",)
    assert classify("mail-cal", "Google tools for Gmail and Google Calendar", None, None, None).platforms == ("Gmail", "Google Calendar")
    assert "Docker" not in classify("weather", "Weather forecasts; runs in a Docker container", None, None, None).platforms
    assert classify("docker-manager", "Manage Docker containers and images", None, None, None).platforms == ("Docker",)


@pytest.mark.skipif(not SOURCE_FIXTURES.is_dir(), reason="source snapshots absent")
def test_every_heading_of_the_snapshots_is_mapped_and_decides_where_keywords_are_silent(tmp_path):
    db = snapshot_catalog(tmp_path / "c.db")
    headings = {heading for row in db.query("select source_categories from servers")
                for listed in json.loads(row["source_categories"]).values() for heading in listed}
    assert len(headings) > 80 and {h for h in headings if heading_key(h) not in HEADINGS} == set()
    # real listings whose text no keyword reads: awesome-mcp-servers files them under "Delivery" and "Biology, Medicine and
    # Bioinformatics" (main: Other for both)
    category = {row["name"]: row["category"] for row in db.query("select name, category from servers where name in (?, ?)",
                                                                  ["jordandalton/doordash-mcp-server", "longevity-genie/biothings-mcp"])}
    assert category == {"jordandalton/doordash-mcp-server": "E-commerce", "longevity-genie/biothings-mcp": "Data"}
