"""Classification (seed 000): one category and the target platforms of a server, by keyword matching.

Matching is weighted by where a keyword appears: name 3×, repository path 2×, registry namespace 2×,
description 1×. The category with the highest weighted count wins (ties go to the earlier category
in CATEGORIES); a server that matches nothing is "Other". Platforms are every label whose keyword
matches anywhere, ordered by weight then name. Pure: the same fields always give the same answer.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

WEIGHTS = {"name": 3, "repository": 2, "namespace": 2, "description": 1}

# Seed 000's fourteen categories, in tie-break order. Keywords are whole words (or word prefixes
# ending in "*"), matched case-insensitively after splitting camelCase and separators.
CATEGORIES: dict[str, list[str]] = {
    "AI/ML": ["ai", "llm", "llms", "openai", "anthropic", "claude", "gpt", "gemini", "ollama", "huggingface", "embedding*",
              "ml", "machine", "inference", "rag", "mistral", "replicate", "langchain", "vector*", "transformers"],
    "Database": ["database*", "db", "sql", "postgres*", "mysql", "sqlite", "mongo*", "redis", "supabase", "neo4j", "clickhouse", "duckdb",
                 "snowflake", "bigquery", "dynamodb", "cassandra", "prisma", "firestore", "elasticsearch", "pinecone", "qdrant", "weaviate",
                 "milvus", "chroma", "mariadb", "oracle", "cockroach*", "planetscale", "neon", "turso"],
    "DevTools": ["git", "github", "gitlab", "bitbucket", "code", "coding", "developer*", "dev", "devtools", "ide", "vscode", "lint*", "test*",
                 "debug*", "compiler", "npm", "pypi", "docker", "kubernetes", "k8s", "terraform", "ci", "cd", "jenkins", "sentry", "jira",
                 "linear", "repo", "repository", "repositories", "shell", "terminal", "filesystem", "files", "file", "openapi",
                 "swagger", "postman", "figma"],
    "Cloud": ["cloud", "aws", "azure", "gcp", "google-cloud", "s3", "lambda", "cloudflare", "vercel", "netlify", "heroku", "digitalocean",
              "fly", "render", "serverless", "ec2", "cloudrun", "workers", "hosting", "cdn"],
    "Communication": ["slack", "discord", "email", "mail", "gmail", "outlook", "telegram", "whatsapp", "teams", "sms", "twilio", "chat",
                      "message*", "messaging", "matrix", "zoom", "mastodon", "bluesky", "twitter", "linkedin", "reddit", "notification*"],
    "Productivity": ["notion", "calendar", "todo*", "task*", "asana", "trello", "clickup", "monday", "obsidian", "evernote", "note*",
                     "docs", "document*", "sheets", "spreadsheet*", "excel", "word", "office", "drive", "dropbox", "airtable", "confluence",
                     "productivity", "memory", "timezone*", "reminder*", "pdf"],
    "Search": ["search*", "brave", "google", "bing", "duckduckgo", "tavily", "exa", "perplexity", "serp*", "kagi", "web", "crawl*",
               "scrap*", "fetch", "wikipedia", "arxiv", "lookup"],
    "Monitoring": ["monitor*", "observability", "logs", "logging", "log", "metrics", "grafana", "prometheus", "datadog", "newrelic",
                   "pagerduty", "opsgenie", "uptime", "alert*", "trace*", "tracing", "splunk", "incident*"],
    "Data": ["data", "dataset*", "analytics", "csv", "json", "etl", "pipeline*", "warehouse", "dbt", "pandas", "kaggle", "tableau",
             "looker", "metabase", "weather", "geo*", "maps", "finance-data", "statistics", "census"],
    "Finance": ["finance", "financial", "stripe", "paypal", "payment*", "bank*", "crypto*", "bitcoin", "ethereum", "blockchain", "wallet*",
                "trading", "stock*", "invoice*", "accounting", "quickbooks", "xero", "plaid", "coinbase", "defi", "solana", "tax"],
    "Media": ["image*", "video*", "audio", "music", "spotify", "youtube", "podcast*", "photo*", "media", "tts", "speech", "voice",
              "dall-e", "midjourney", "stable-diffusion", "elevenlabs", "transcri*", "ffmpeg", "canva", "svg"],
    "E-commerce": ["shop*", "ecommerce", "e-commerce", "commerce", "shopify", "woocommerce", "amazon", "ebay", "etsy", "cart", "product*",
                   "order*", "inventory", "magento", "bigcommerce", "retail", "store"],
    "Browser": ["browser*", "playwright", "puppeteer", "selenium", "chrome", "chromium", "firefox", "headless", "webdriver", "browse",
                "browserbase", "screenshot*"],
}
OTHER = "Other"

# Keyword → platform label (seed 000: "postgres" → PostgreSQL, "openai" → OpenAI, ...).
PLATFORMS: dict[str, str] = {
    "postgres": "PostgreSQL", "postgresql": "PostgreSQL", "pg": "PostgreSQL", "mysql": "MySQL", "mariadb": "MariaDB", "sqlite": "SQLite",
    "mongodb": "MongoDB", "mongo": "MongoDB", "redis": "Redis", "supabase": "Supabase", "neo4j": "Neo4j", "clickhouse": "ClickHouse",
    "duckdb": "DuckDB", "snowflake": "Snowflake", "bigquery": "BigQuery", "dynamodb": "DynamoDB", "cassandra": "Cassandra",
    "elasticsearch": "Elasticsearch", "opensearch": "OpenSearch", "pinecone": "Pinecone", "qdrant": "Qdrant", "weaviate": "Weaviate",
    "milvus": "Milvus", "chroma": "Chroma", "chromadb": "Chroma", "firestore": "Firebase", "firebase": "Firebase", "neon": "Neon",
    "turso": "Turso", "planetscale": "PlanetScale", "prisma": "Prisma", "oracle": "Oracle", "mssql": "SQL Server",
    "openai": "OpenAI", "gpt": "OpenAI", "chatgpt": "OpenAI", "anthropic": "Anthropic", "claude": "Anthropic", "gemini": "Google Gemini",
    "ollama": "Ollama", "huggingface": "Hugging Face", "mistral": "Mistral", "replicate": "Replicate", "perplexity": "Perplexity",
    "langchain": "LangChain", "llamaindex": "LlamaIndex", "cohere": "Cohere", "groq": "Groq", "deepseek": "DeepSeek",
    "github": "GitHub", "gitlab": "GitLab", "bitbucket": "Bitbucket", "git": "Git", "docker": "Docker", "kubernetes": "Kubernetes",
    "k8s": "Kubernetes", "helm": "Helm", "terraform": "Terraform", "jenkins": "Jenkins", "sentry": "Sentry", "jira": "Jira",
    "linear": "Linear", "vscode": "VS Code", "npm": "npm", "pypi": "PyPI", "figma": "Figma", "postman": "Postman",
    "aws": "AWS", "s3": "AWS", "lambda": "AWS", "ec2": "AWS", "bedrock": "AWS", "azure": "Azure", "gcp": "Google Cloud",
    "cloudflare": "Cloudflare", "vercel": "Vercel", "netlify": "Netlify", "heroku": "Heroku", "digitalocean": "DigitalOcean",
    "slack": "Slack", "discord": "Discord", "gmail": "Gmail", "outlook": "Microsoft Outlook", "telegram": "Telegram",
    "whatsapp": "WhatsApp", "teams": "Microsoft Teams", "twilio": "Twilio", "zoom": "Zoom", "mastodon": "Mastodon",
    "bluesky": "Bluesky", "twitter": "X (Twitter)", "linkedin": "LinkedIn", "reddit": "Reddit",
    "notion": "Notion", "asana": "Asana", "trello": "Trello", "clickup": "ClickUp", "obsidian": "Obsidian", "evernote": "Evernote",
    "airtable": "Airtable", "confluence": "Confluence", "dropbox": "Dropbox", "gdrive": "Google Drive", "drive": "Google Drive",
    "sheets": "Google Sheets", "excel": "Microsoft Excel", "todoist": "Todoist", "calendar": "Calendar",
    "brave": "Brave Search", "google": "Google", "bing": "Bing", "duckduckgo": "DuckDuckGo", "tavily": "Tavily", "exa": "Exa",
    "kagi": "Kagi", "wikipedia": "Wikipedia", "arxiv": "arXiv", "youtube": "YouTube", "spotify": "Spotify",
    "grafana": "Grafana", "prometheus": "Prometheus", "datadog": "Datadog", "newrelic": "New Relic", "pagerduty": "PagerDuty",
    "splunk": "Splunk", "opsgenie": "Opsgenie",
    "stripe": "Stripe", "paypal": "PayPal", "plaid": "Plaid", "coinbase": "Coinbase", "quickbooks": "QuickBooks", "xero": "Xero",
    "ethereum": "Ethereum", "bitcoin": "Bitcoin", "solana": "Solana",
    "shopify": "Shopify", "woocommerce": "WooCommerce", "amazon": "Amazon", "ebay": "eBay", "etsy": "Etsy", "magento": "Magento",
    "playwright": "Playwright", "puppeteer": "Puppeteer", "selenium": "Selenium", "chrome": "Chrome", "chromium": "Chrome",
    "firefox": "Firefox", "browserbase": "Browserbase", "elevenlabs": "ElevenLabs", "ffmpeg": "FFmpeg", "canva": "Canva",
    "salesforce": "Salesforce", "hubspot": "HubSpot", "zendesk": "Zendesk", "intercom": "Intercom", "tableau": "Tableau",
    "looker": "Looker", "metabase": "Metabase", "dbt": "dbt", "kaggle": "Kaggle", "sap": "SAP", "servicenow": "ServiceNow",
}


@dataclass(frozen=True)
class Classification:
    category: str
    platforms: tuple[str, ...]


_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")
_SPLIT = re.compile(r"[^a-z0-9]+")


def words(text: str | None) -> list[str]:
    """Lower-case word tokens: camelCase, kebab-case, snake_case, paths and URLs all split."""
    if not text:
        return []
    return [w for w in _SPLIT.split(_CAMEL.sub(" ", text).lower()) if w]


def _matcher(keywords: list[str]):
    exact = {k for k in keywords if not k.endswith("*")}
    # hyphenated keywords ("google-cloud") match as adjacent words
    exact_tokens = {k for k in exact if "-" not in k}
    phrases = [tuple(k.split("-")) for k in exact if "-" in k]
    prefixes = tuple(k[:-1] for k in keywords if k.endswith("*"))

    def count(tokens: list[str]) -> int:
        hits = sum(1 for t in tokens if t in exact_tokens or (prefixes and t.startswith(prefixes)))
        for phrase in phrases:
            hits += sum(1 for i in range(len(tokens) - len(phrase) + 1) if tuple(tokens[i : i + len(phrase)]) == phrase)
        return hits

    return count


_MATCHERS = {category: _matcher(keywords) for category, keywords in CATEGORIES.items()}


def repository_path(repository: str | None, subpath: str | None) -> str:
    """The owner/name (and monorepo folder) part of a repository URL."""
    if not repository:
        return ""
    path = re.sub(r"^[a-z]+://[^/]+/", "", repository.strip(), flags=re.I).removesuffix(".git")
    return f"{path}/{subpath}" if subpath else path


def namespace(package: str | None) -> str:
    """A registry namespace: the npm scope, the reverse-DNS prefix of the official registry, else empty."""
    if not package:
        return ""
    if package.startswith("@") and "/" in package:
        return package[1:].split("/", 1)[0]
    if "/" in package:
        return package.split("/", 1)[0]
    return ""


@lru_cache(maxsize=4096)
def classify(name: str, description: str | None, repository: str | None, subpath: str | None, package: str | None) -> Classification:
    fields = {
        "name": words(name) + words(package.split("/")[-1] if package else None),
        "repository": words(repository_path(repository, subpath)),
        "namespace": words(namespace(package)),
        "description": words(description),
    }
    best, best_score = OTHER, 0
    for category, count in _MATCHERS.items():
        value = sum(WEIGHTS[field] * count(tokens) for field, tokens in fields.items())
        if value > best_score:
            best, best_score = category, value
    platform_weight: dict[str, int] = {}
    for field, tokens in fields.items():
        for token in set(tokens):
            label = PLATFORMS.get(token)
            if label:
                platform_weight[label] = platform_weight.get(label, 0) + WEIGHTS[field]
    platforms = tuple(label for label, _ in sorted(platform_weight.items(), key=lambda kv: (-kv[1], kv[0])))
    return Classification(best, platforms)
