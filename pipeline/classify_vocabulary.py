"""The classification vocabulary (seed 000 gives the categories and places, not the words): category keywords, platform
keywords and labels, context words, AI clients, and the registry scaffolding that is no topic. Read by pipeline.classify."""

from __future__ import annotations

# Seed 000's fourteen categories, in tie-break order. Keywords are whole words (or word prefixes
# ending in "*"), matched case-insensitively after splitting camelCase and separators.
CATEGORIES: dict[str, list[str]] = {
    "AI/ML": ["ai", "llm", "llms", "openai", "anthropic", "claude", "gpt", "gemini", "ollama", "huggingface", "embedding*", "ml", "machine",
              "inference", "rag", "mistral", "replicate", "langchain", "vector*", "transformers", "completions", "hyperparameter*", "optuna",
              "manus", "bedrock", "chat-completions", "hugging-face", "crewai", "fastgpt"],
    "Database": ["database*", "db", "sql", "postgres*", "mysql", "sqlite", "mongo*", "redis", "supabase", "neo4j", "clickhouse", "duckdb",
                 "snowflake", "bigquery", "dynamodb", "cassandra", "prisma", "firestore", "elasticsearch", "pinecone", "qdrant", "weaviate",
                 "milvus", "chroma", "mariadb", "cockroach*", "planetscale", "neon", "turso", "tables", "oracledb", "oracle-database", "valkey",
                 "instantdb", "schemacrawler", "memcached", "elasticache", "tablestore"],
    "DevTools": ["git", "github", "gitlab", "bitbucket", "code", "coding", "developer*", "dev", "devtools", "ide", "vscode", "lint*", "test*",
                 "debug*", "compiler", "npm", "pypi", "docker", "ci", "cd", "jenkins", "jira", "linear", "repo", "repository", "repositories",
                 "shell", "terminal", "filesystem", "files", "file", "openapi", "swagger", "postman", "figma", "codebase*", "programming",
                 "scaffold*", "ides", "jetbrains", "intellij", "pycharm", "webstorm", "xcode", "android", "ios", "simulator*", "homebrew", "brew",
                 "nuget", "dotnet", "security", "malware", "reverse-engineering", "reversing", "decompil*", "disassembl*", "binary", "ghidra",
                 "ida", "pentest*", "exploit*", "mitre", "semgrep", "sonarqube", "snyk", "leetcode", "bitrise", "browserstack", "circleci", "gitea",
                 "atomgit", "authentication", "descope", "auth0", "okta", "dependenc*", "curl", "documentation", "docs", "cve*", "vuln*", "nvd",
                 "cybersecurity", "threat*", "shodan", "sonarsource", "graphql", "sandbox*", "development", "codecommit", "codebuild",
                 "codepipeline", "mock*", "appsec", "web-ui",
                 "web-app", "web-apps", "web-interface", "web-component", "web-components", "web-development", "webview"],
    "Cloud": ["cloud", "aws", "azure", "gcp", "google-cloud", "s3", "lambda", "cloudflare", "vercel", "netlify", "heroku", "digitalocean", "fly",
              "render", "serverless", "ec2", "cloudrun", "workers", "hosting", "cdn", "kubernetes", "k8s", "helm", "terraform", "pulumi",
              "infrastructure", "iac", "bucket*", "aks", "eks", "gke", "awslabs", "cloud-run", "deploy*", "cloudformation", "cdk"],
    "Communication": ["slack", "discord", "email", "mail", "gmail", "outlook", "telegram", "whatsapp", "msteams", "microsoft-teams", "sms",
                      "twilio", "chat", "message*", "messaging", "matrix", "zoom", "mastodon", "bluesky", "twitter", "linkedin", "reddit",
                      "notification*", "social", "nostr", "xiaohongshu", "rednote", "weibo", "instagram", "facebook", "tiktok", "wechat", "feishu",
                      "dingtalk", "mattermost", "telephony", "voip", "phone-call", "phone-calls", "imessage", "communication"],
    "Productivity": ["notion", "calendar", "todo*", "task*", "asana", "trello", "clickup", "monday", "obsidian", "evernote", "note", "notes",
                     "notetaking", "document", "documents", "sheets", "spreadsheet*", "excel", "word", "office", "drive", "dropbox",
                     "airtable", "confluence", "productivity", "memory", "timezone*", "reminder*", "pdf", "knowledge", "memories", "workspace*",
                     "convert*", "conversion", "markdown", "crm", "erp", "odoo", "tana", "datetime", "logseq", "zotero", "anki", "miro", "composio",
                     "zapier", "n8n", "atlassian", "gsuite", "g-suite", "google-workspace", "presentation*", "slides", "keynote", "powerpoint",
                     "docx", "legal", "agreement*"],
    "Search": ["search*", "brave", "google", "bing", "duckduckgo", "tavily", "exa", "perplexity", "serp*", "kagi", "web", "crawl*", "scrap*",
               "fetch", "wikipedia", "arxiv", "lookup", "stackoverflow", "stack-overflow", "dictionary", "encyclopedia", "website*", "searxng",
               "apify", "firecrawl", "baidu", "webresearch"],
    "Monitoring": ["monitor*", "observability", "logs", "logging", "log", "metrics", "grafana", "prometheus", "datadog", "newrelic", "pagerduty",
                   "opsgenie", "uptime", "alert*", "trace*", "tracing", "splunk", "incident*", "siem", "wazuh", "telemetry", "reliability",
                   "outage*", "downtime", "kibana", "posthog", "sentry", "zabbix", "nagios", "checkmk"],
    "Data": ["data", "dataset*", "analytics", "csv", "etl", "pipeline*", "warehouse", "dbt", "pandas", "kaggle", "tableau", "looker", "metabase",
             "weather", "geo*", "maps", "finance-data", "statistics", "census", "jupyter", "notebook", "notebooks", "databricks", "kafka", "gis",
             "location", "geocoding", "chart*", "visualiz*", "datawrapper", "plot*", "bioinformatics", "genomic*", "transcriptomics", "protein*",
             "molecul*", "chemistry", "scientific", "government", "parliament*", "legislat*", "transit", "transport", "transportation", "traffic"],
    "Finance": ["finance", "financial", "stripe", "paypal", "payment*", "bank*", "crypto*", "bitcoin", "ethereum", "blockchain", "wallet*",
                "trading", "stock*", "invoice*", "accounting", "quickbooks", "xero", "plaid", "coinbase", "defi", "solana", "tax", "market",
                "markets", "prices", "onchain", "on-chain", "dex", "backtest*", "quant*", "chainlink", "binance", "quantconnect", "liquidity",
                "pancakeswap", "multiversx", "smart-contract", "smart-contracts", "web3", "nft", "nfts", "solidity", "evm", "invest*", "okx",
                "openzeppelin"],
    "Media": ["image*", "video*", "audio", "music", "spotify", "youtube", "podcast*", "photo*", "media", "tts", "speech", "voice", "dall-e",
              "midjourney", "stable-diffusion", "elevenlabs", "transcri*", "ffmpeg", "canva", "svg", "reaper", "daw", "drum*", "sampler", "midi",
              "synth*", "comfyui", "blender"],
    "E-commerce": ["shop*", "ecommerce", "e-commerce", "commerce", "shopify", "woocommerce", "amazon", "ebay", "etsy", "cart", "product*", "order*",
                   "inventory", "magento", "bigcommerce", "retail", "store", "merchant*", "pos", "sales"],
    "Browser": ["browser*", "playwright", "puppeteer", "selenium", "chrome", "chromium", "firefox", "headless", "webdriver", "browserbase",
                "screenshot*", "browsing"],
}
OTHER = "Other"
# What a reader files under Other although it has a subject: games, sport, the smart home, marketing. Matched like a
# category's keywords and last in the tie-break order.
OTHER_KEYWORDS = ["game", "games", "gaming", "dnd", "rpg", "tabletop", "chess", "minecraft", "roblox", "pokemon", "unreal", "unity", "godot",
                  "esports", "sport*", "fitness", "workout*", "strava", "smart-home", "home-assistant", "homeassistant", "hue", "openhue", "lights",
                  "iot", "qr", "seo", "marketing", "advertis*", "ads", "travel*", "hotel*", "flight*", "airline*", "tourism", "tripadvisor",
                  "education*", "e-learning", "elearning", "quiz*", "exam", "exams", "students", "wellness"]
# Words nearly every MCP listing uses about its context ("for AI assistants", "give LLMs your data", "on AWS"): they
# decide a category only when no other keyword matched.
WEAK = {"ai", "llm", "llms", "claude", "gpt", "chatgpt", "data", "aws", "amazon", "azure", "gcp", "google", "microsoft", "cloudflare", "security",
        "infrastructure", "deploy", "deployment", "deployments", "hosting", "log"}

# Keyword → platform label (seed 000: "postgres" → PostgreSQL, "openai" → OpenAI, ...).
PLATFORMS: dict[str, str] = {
    "postgres": "PostgreSQL", "postgresql": "PostgreSQL", "pg": "PostgreSQL", "mysql": "MySQL", "mariadb": "MariaDB", "sqlite": "SQLite",
    "mongodb": "MongoDB", "mongo": "MongoDB", "redis": "Redis", "supabase": "Supabase", "neo4j": "Neo4j", "clickhouse": "ClickHouse",
    "duckdb": "DuckDB", "snowflake": "Snowflake", "bigquery": "BigQuery", "dynamodb": "DynamoDB", "cassandra": "Cassandra",
    "elasticsearch": "Elasticsearch", "opensearch": "OpenSearch", "pinecone": "Pinecone", "qdrant": "Qdrant", "weaviate": "Weaviate",
    "milvus": "Milvus", "chroma": "Chroma", "chromadb": "Chroma", "firestore": "Firebase", "firebase": "Firebase", "neon": "Neon",
    "turso": "Turso", "planetscale": "PlanetScale", "prisma": "Prisma", "oracledb": "Oracle", "oracle-database": "Oracle", "oracle-db": "Oracle",
    "mssql": "SQL Server",
    "openai": "OpenAI", "gpt": "OpenAI", "chatgpt": "OpenAI", "anthropic": "Anthropic", "claude": "Anthropic", "gemini": "Google Gemini",
    "ollama": "Ollama", "huggingface": "Hugging Face", "hugging-face": "Hugging Face", "mistral": "Mistral", "replicate": "Replicate",
    "perplexity": "Perplexity",
    "langchain": "LangChain", "llamaindex": "LlamaIndex", "cohere": "Cohere", "groq": "Groq", "deepseek": "DeepSeek",
    "github": "GitHub", "gitlab": "GitLab", "bitbucket": "Bitbucket", "git": "Git", "docker": "Docker", "kubernetes": "Kubernetes",
    "k8s": "Kubernetes", "helm": "Helm", "terraform": "Terraform", "jenkins": "Jenkins", "sentry": "Sentry", "jira": "Jira",
    "linear": "Linear", "vscode": "VS Code", "npm": "npm", "pypi": "PyPI", "figma": "Figma", "postman": "Postman",
    "aws": "AWS", "s3": "AWS", "lambda": "AWS", "ec2": "AWS", "bedrock": "AWS", "azure": "Azure", "gcp": "Google Cloud",
    "cloudflare": "Cloudflare", "vercel": "Vercel", "netlify": "Netlify", "heroku": "Heroku", "digitalocean": "DigitalOcean",
    "slack": "Slack", "discord": "Discord", "gmail": "Gmail", "outlook": "Microsoft Outlook", "telegram": "Telegram",
    "whatsapp": "WhatsApp", "msteams": "Microsoft Teams", "microsoft-teams": "Microsoft Teams", "twilio": "Twilio", "zoom": "Zoom",
    "mastodon": "Mastodon",
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


# Platform keywords written as two words ("stack-overflow") match as adjacent words.
PLATFORMS.update({
    "stackoverflow": "Stack Overflow", "stack-overflow": "Stack Overflow", "jupyter": "Jupyter", "databricks": "Databricks",
    "kafka": "Kafka", "pulumi": "Pulumi", "ansible": "Ansible", "jetbrains": "JetBrains", "intellij": "JetBrains", "pycharm": "JetBrains",
    "xcode": "Xcode", "ghidra": "Ghidra", "ida-pro": "IDA Pro", "binaryninja": "Binary Ninja", "binary-ninja": "Binary Ninja",
    "semgrep": "Semgrep", "sonarqube": "SonarQube", "snyk": "Snyk", "apify": "Apify", "firecrawl": "Firecrawl", "jina": "Jina AI",
    "searxng": "SearXNG", "serpapi": "SerpApi", "baidu": "Baidu", "csdn": "CSDN", "composio": "Composio", "zapier": "Zapier",
    "n8n": "n8n", "browserstack": "BrowserStack", "homebrew": "Homebrew", "nuget": "NuGet", "cursor": "Cursor", "unity": "Unity",
    "unity3d": "Unity", "unreal": "Unreal Engine", "godot": "Godot", "blender": "Blender", "strava": "Strava", "valkey": "Valkey",
    "nostr": "Nostr", "chainlink": "Chainlink", "odoo": "Odoo", "xiaohongshu": "Xiaohongshu", "rednote": "Xiaohongshu",
    "google-ads": "Google Ads", "philips-hue": "Philips Hue", "comfyui": "ComfyUI", "optuna": "Optuna", "leetcode": "LeetCode",
    "wazuh": "Wazuh", "awslabs": "AWS", "amazon-bedrock": "AWS", "amazon-location": "AWS", "amazon-s3": "AWS", "amazon-q": "AWS",
    "amazon-nova": "AWS", "amazon-sagemaker": "AWS", "amazon-kendra": "AWS", "amazon-rds": "AWS", "amazon-cloudwatch": "AWS",
    "openrouter": "OpenRouter", "xai": "xAI", "grok": "xAI",
    "qwen": "Qwen", "midjourney": "Midjourney", "wandb": "Weights & Biases", "mlflow": "MLflow",
    "kibana": "Kibana", "loki": "Grafana", "posthog": "PostHog", "mixpanel": "Mixpanel", "google-analytics": "Google Analytics",
    "honeycomb": "Honeycomb", "dynatrace": "Dynatrace", "binance": "Binance", "coingecko": "CoinGecko", "coinmarketcap": "CoinMarketCap",
    "polymarket": "Polymarket", "uniswap": "Uniswap",
    "yfinance": "Yahoo Finance", "yahoo-finance": "Yahoo Finance", "wordpress": "WordPress",
    "webflow": "Webflow", "contentful": "Contentful", "strapi": "Strapi", "mailchimp": "Mailchimp", "sendgrid": "SendGrid", "resend": "Resend",
    "instagram": "Instagram", "facebook": "Facebook",
    "tiktok": "TikTok", "pinterest": "Pinterest", "twitch": "Twitch", "steam": "Steam", "hackernews": "Hacker News",
    "hacker-news": "Hacker News", "pubmed": "PubMed", "zotero": "Zotero", "anki": "Anki", "logseq": "Logseq", "miro": "Miro",
    "calendly": "Calendly", "ticktick": "TickTick", "mattermost": "Mattermost", "wechat": "WeChat", "feishu": "Feishu",
    "lark": "Feishu", "dingtalk": "DingTalk", "bilibili": "Bilibili", "weibo": "Weibo", "douyin": "TikTok", "onedrive": "OneDrive",
    "sharepoint": "SharePoint", "google-drive": "Google Drive", "google-calendar": "Google Calendar", "google-maps": "Google Maps",
    "mapbox": "Mapbox", "openstreetmap": "OpenStreetMap", "osm": "OpenStreetMap", "home-assistant": "Home Assistant",
    "homeassistant": "Home Assistant", "okta": "Okta", "hashicorp-vault": "HashiCorp Vault", "apache-spark": "Apache Spark",
    "pyspark": "Apache Spark", "auth0": "Auth0", "circleci": "CircleCI",
    "argocd": "Argo CD", "openshift": "OpenShift", "flyio": "Fly.io", "alibaba": "Alibaba Cloud",
    "aliyun": "Alibaba Cloud", "gcloud": "Google Cloud", "google-cloud": "Google Cloud", "kafka-connect": "Kafka",
    "rabbitmq": "RabbitMQ", "airflow": "Airflow", "trino": "Trino", "redshift": "AWS",
    "cloudwatch": "AWS", "azure-devops": "Azure", "teamcity": "TeamCity", "github-actions": "GitHub", "gitea": "Gitea",
    "bitrise": "Bitrise", "quantconnect": "QuantConnect", "manus": "Manus", "schemacrawler": "SchemaCrawler", "tradingview": "TradingView",
    "jira-cloud": "Jira", "atlassian": "Atlassian",
    "youtrack": "YouTrack", "typesense": "Typesense", "meilisearch": "Meilisearch",
    "algolia": "Algolia", "lancedb": "LanceDB", "pgvector": "PostgreSQL", "kubectl": "Kubernetes", "helm": "Helm",
})
# "Google BigQuery", "Amazon ElastiCache": a vendor's name before its product names the product, not the vendor's other platforms.
for _product in ("bigquery", "gemini", "sheets", "drive", "maps", "analytics", "ads", "cloud", "firebase", "firestore", "gmail", "meet",
                 "search", "colab", "tasks", "keep", "photos", "forms", "translate"):
    PLATFORMS.setdefault(f"google-{_product}", PLATFORMS.get(_product, "Google"))
PLATFORMS.update({f"google-{k}": label for k, label in (("docs", "Google Docs"), ("calendar", "Google Calendar"), ("workspace", "Google Workspace"),
                                                      ("chat", "Google Chat"), ("scholar", "Google Scholar"), ("slides", "Google Slides"))})
PLATFORMS.update({f"amazon-{k}": "AWS" for k in (
    "location", "bedrock", "s3", "q", "nova", "sagemaker", "kendra", "rds", "cloudwatch", "elasticache", "dynamodb", "sqs", "sns",
    "opensearch", "neptune", "timestream", "keyspaces", "memorydb", "documentdb", "athena", "redshift", "aurora", "ec2", "ecs", "eks")})
PLATFORMS.update({"codecommit": "AWS", "codebuild": "AWS", "codepipeline": "AWS", "cloudformation": "AWS", "okx": "OKX",
                  "openzeppelin": "OpenZeppelin", "crewai": "CrewAI", "fastgpt": "FastGPT", "imessage": "iMessage", "kintone": "kintone"})
PLATFORMS.update({"cloud-run": "Google Cloud", "gsuite": "Google Workspace", "g-suite": "Google Workspace", "zabbix": "Zabbix",
                  "nagios": "Nagios", "memcached": "Memcached", "shodan": "Shodan", "datawrapper": "Datawrapper", "alibabacloud": "Alibaba Cloud"})
# More general words per category, from the frequent words of the snapshots' server names that matched nothing (issue 17).
for _category, _words in {
    "AI/ML": ["multimodal", "fine-tuning", "finetun*", "evals"],
    "Database": ["influxdb", "couchbase", "odbc", "jdbc"],
    "DevTools": ["ssh", "lsp", "adb", "gdb", "nvim", "neovim", "vim", "emacs", "repl", "interpreter", "regex", "godoc", "laravel", "django",
                 "flutter", "kotlin", "gradle", "maven", "storybook", "refactor*", "vite"],
    "Cloud": ["vmware", "esxi", "openstack", "virtual-machine", "virtual-machines"],
    "Communication": ["ntfy", "newsletter*", "inbox"],
    "Productivity": ["wiki", "mediawiki", "bookmark*", "cms", "blog*", "planner", "schedul*", "meeting*", "timesheet*", "kanban",
                     "microsoft-365", "office365", "m365"],
    "Search": ["scholarly", "scholar", "openalex", "crossref"],
    "Monitoring": ["healthcheck*"],
    "Data": ["stata", "matlab", "clinical", "medical", "fhir", "economic*", "earthdata"],
    "Finance": ["trader", "traders", "portfolio*", "x402", "billing", "budget*", "forex"],
    "Media": ["ocr", "movie*", "film*", "anime", "manga", "comic*", "gif", "animation*", "nano-banana", "nanobanana"],
    "E-commerce": ["marketplace*", "coupon*", "mercadolibre", "mercado-libre"],
    "Browser": ["safari"],
}.items():
    CATEGORIES[_category].extend(_words)
CATEGORIES["Data"].extend(["genetic*", "genome*", "dna", "power-bi", "powerbi"])
CATEGORIES["Finance"].extend(["vechain", "avalanche", "arbitrum", "cardano", "polkadot", "aptos", "starknet", "bybit", "kucoin", "bitget",
                              "upbit"])
CATEGORIES["Productivity"].extend(["attio", "pipedrive", "zoho"])
CATEGORIES["Search"].extend(["oxylabs", "brightdata", "bright-data", "scrapingbee", "zenrows", "scraperapi", "crawlbase"])
OTHER_KEYWORDS.extend(["mtg", "nba", "mlb", "nfl", "nhl", "astrolog*", "horoscope", "tarot", "bazi", "recipe*", "cooking", "lottery"])
# Products a reader knows by name (the snapshots' frequent proper nouns): each counts for its product's category (LABEL_CATEGORY).
PLATFORMS.update({"dify": "Dify", "langfuse": "Langfuse", "opik": "Opik", "mem0": "Mem0", "redmine": "Redmine", "gitee": "Gitee",
                  "proxmox": "Proxmox", "railway": "Railway", "aiven": "Aiven", "netdata": "Netdata", "victoriametrics": "VictoriaMetrics",
                  "alpaca": "Alpaca", "hyperliquid": "Hyperliquid", "etherscan": "Etherscan", "ynab": "YNAB", "hedera": "Hedera",
                  "superset": "Apache Superset", "qgis": "QGIS", "wolfram": "Wolfram Alpha", "wolframalpha": "Wolfram Alpha",
                  "unsplash": "Unsplash", "tmdb": "TMDB", "ableton": "Ableton Live", "kakao": "Kakao", "kakaotalk": "Kakao", "vapi": "Vapi",
                  "clockify": "Clockify", "workday": "Workday", "egnyte": "Egnyte", "drupal": "Drupal", "raindrop": "Raindrop.io",
                  "lovable": "Lovable", "couchbase": "Couchbase", "influxdb": "InfluxDB", "prefect": "Prefect", "pipedream": "Pipedream",
                  "glean": "Glean", "excalidraw": "Excalidraw", "mintlify": "Mintlify", "sourcegraph": "Sourcegraph",
                  "power-bi": "Power BI", "powerbi": "Power BI", "attio": "Attio", "pipedrive": "Pipedrive",
                  "zoho": "Zoho", "oxylabs": "Oxylabs", "brightdata": "Bright Data", "bright-data": "Bright Data",
                  "nasa": "NASA", "microsoft-365": "Microsoft 365", "office365": "Microsoft 365", "m365": "Microsoft 365",
                  "ntfy": "ntfy", "matlab": "MATLAB", "stata": "Stata"})

# The category of a platform whose keywords no category lists: the product's domain.
LABEL_CATEGORY = {
    "AI/ML": ["Cohere", "DeepSeek", "Groq", "LlamaIndex", "MLflow", "OpenRouter", "Qwen", "Weights & Biases", "xAI", "Manus", "CrewAI"],
    "Database": ["LanceDB", "OpenSearch", "SQL Server", "Trino", "CockroachDB"],
    "DevTools": ["Cursor", "HashiCorp Vault", "RabbitMQ", "TeamCity", "YouTrack", "Temporal"],
    "Cloud": ["Alibaba Cloud", "Ansible", "Argo CD", "Fly.io", "OpenShift", "AWS"],
    "Communication": ["Hacker News", "Intercom", "Mailchimp", "Pinterest", "Resend", "SendGrid", "Zendesk", "iMessage", "LINE"],
    "Productivity": ["Calendly", "Contentful", "HubSpot", "OneDrive", "SAP", "Salesforce", "ServiceNow", "SharePoint", "Strapi", "TickTick",
                     "Todoist", "Webflow", "WordPress", "kintone"],
    "Search": ["Algolia", "CSDN", "Jina AI", "Meilisearch", "PubMed", "SerpApi", "Typesense"],
    "Monitoring": ["Dynatrace", "Honeycomb"],
    "Data": ["Airflow", "Apache Spark", "Mapbox", "Mixpanel", "OpenStreetMap"],
    "Finance": ["CoinGecko", "CoinMarketCap", "Polymarket", "TradingView", "Uniswap", "OKX", "Morningstar", "OpenZeppelin"],
    "Media": ["Bilibili", "Twitch"],
    OTHER: ["Steam"],
}
for _category, _labels in {
    "AI/ML": ["Dify", "Langfuse", "Opik"], "Database": ["Aiven"], "DevTools": ["Redmine", "Gitee", "Lovable", "Mintlify", "Sourcegraph"],
    "Cloud": ["Proxmox", "Railway"], "Communication": ["Kakao", "Vapi"],
    "Productivity": ["Mem0", "Clockify", "Workday", "Egnyte", "Drupal", "Raindrop.io", "Pipedream", "Excalidraw"],
    "Search": ["Wolfram Alpha", "Glean"], "Monitoring": ["Netdata", "VictoriaMetrics"], "Data": ["Apache Superset", "QGIS", "NASA", "Prefect"],
    "Finance": ["Alpaca", "Hyperliquid", "Etherscan", "YNAB", "Hedera"], "Media": ["Unsplash", "TMDB", "Ableton Live"],
}.items():
    LABEL_CATEGORY[_category].extend(_labels)
LABEL_CATEGORY = {label: category for category, labels in LABEL_CATEGORY.items() for label in labels}
# A vendor or a general name next to its product names the product only: "atlassian" beside Jira or Confluence; "git"
# beside a Git host ("GitHub repositories and git history" is a GitHub server); "google" beside a Google product; "calendar"
# beside a calendar product.
VENDOR_OF = {"Atlassian": ("Jira", "Confluence"), "Calendar": ("Google Calendar", "Microsoft Outlook", "Calendly"),
             "Git": ("GitHub", "GitLab", "Bitbucket", "Gitea"),
             "Google": tuple(sorted({label for label in PLATFORMS.values() if label.startswith("Google ")} | {"Gmail", "BigQuery", "YouTube"}))}

# Words that name the AI client a server is used from ("Discord MCP server for Claude", "works in Cursor"). In a
# description they say where the server runs, not what it is for: they are not read there (unless "Claude API", ...).
CLIENTS = {"claude", "chatgpt", "cursor", "windsurf", "copilot", "cline", "codex"}

# A registry name's reverse-DNS prefix is scaffolding around one meaningful part. A code host's domain
# (io.github.<owner>) says only where the publisher signed in: the owner is the meaning. A republisher's domain
# (ai.smithery/<owner>-<name>) says where a copy is hosted: nothing in it is. Any other domain is its vendor's
# (com.stripe, dev.composio.rube): its labels after the top-level one are the meaning, less the generic ones.
CODE_HOSTS = {"github", "gitlab", "bitbucket", "codeberg"}
REPUBLISHERS = {"smithery", "waystation", "alpic", "mcphub", "glama", "pulsemcp", "klavis-hosted"}
SCAFFOLD = {"mcp", "mcps", "server", "servers", "api", "app", "apps", "www", "staging", "prod", "remote", "io", "registry", "hub"}

# The headings curated lists file a server under (awesome-mcp-servers' sections, best-of-mcp-servers' category titles, the
# Docker catalog's meta.category), written as `heading_key` reads them, and the category each means. A reader chose the
# heading; it decides where it names one of ours. Headings that gather unlike servers ("Other Tools and Integrations",
# "Aggregators", Docker's catch-all "devops", "Customer Data Platforms") or that straddle two of ours ("Travel &
# Transportation", "Support & Service Management", "Knowledge & Memory": notes, agent memory and code docs; "Data Science
# Tools": data and machine learning) mean nothing, nor does any heading not listed here.
HEADINGS: dict[str, str | None] = {
    # awesome-mcp-servers and best-of-mcp-servers (one vocabulary)
    "aerospace and astrodynamics": "Data", "aggregators": None, "architecture and design": None, "art and culture": None,
    "biology medicine and bioinformatics": "Data", "browser automation": "Browser", "cloud platforms": "Cloud", "code execution": "DevTools",
    "coding agents": "DevTools", "command line": "DevTools", "communication": "Communication", "customer data platforms": None,
    "data platforms": "Data", "data science tools": None, "data visualization": "Data", "databases": "Database", "delivery": "E-commerce",
    "developer tools": "DevTools", "e commerce": "E-commerce", "education": OTHER, "embedded system": "DevTools",
    "environment and nature": "Data", "file systems": "DevTools", "finance and fintech": "Finance", "gaming": OTHER,
    "home automation": OTHER, "knowledge and memory": None, "legal": "Productivity", "location services": "Data",
    "marketing": OTHER, "monitoring": "Monitoring", "multimedia process": "Media", "os automation": None,
    "other tools and integrations": None, "product management": "Productivity", "real estate": None, "research": None,
    "search and data extraction": "Search", "security": "DevTools", "social media": "Communication", "sports": OTHER,
    "support and service management": None, "text to speech": "Media", "translation services": None, "travel and transportation": None,
    "version control": "DevTools", "workplace and productivity": "Productivity", "end to end rag platforms": "AI/ML",
    # the Docker catalog's meta.category
    "ai": None, "ai ml": "AI/ML", "analytics": "Data", "automation": None, "blockchain": "Finance", "boating": None, "business": None,
    "code": "DevTools", "commerce": "E-commerce", "cost management": None, "crm": "Productivity", "data analytics": "Data",
    "database": "Database", "development": "DevTools", "devops": None, "devtools": "DevTools",
    "documentation": "DevTools", "ecommerce": "E-commerce", "finance": "Finance", "fintech": "Finance", "games": OTHER,
    "geospatial": "Data", "healthcare": None, "infrastructure": "Cloud", "integration": None, "iot": OTHER, "knowledge": "Productivity",
    "maps": "Data", "media": "Media", "messaging": "Communication", "news": None, "payments": "Finance", "productivity": None,
    "search": "Search", "tools": None, "travel": OTHER, "video": "Media", "web": None, "web scraping": "Search",
}
