"""A small documentation site written the way Mintlify and Docusaurus sites are: MDX pages with
imports, components, code groups, tabs and callouts, and snippet files the pages import."""

from __future__ import annotations

from pathlib import Path

PAGES = {
    # Mintlify: a code sample lives in an imported snippet; cards, a callout, an accordion
    "learn/add_documents.mdx": """---
title: Add documents
description: Send documents to an index.
---
import CodeSamplesAddMovies from '/snippets/samples/code_samples_add_movies_1.mdx';
import { Badge } from '/snippets/badge.jsx';

Use the add documents route to send a JSON array of movies to the `movies` index.

<CodeSamplesAddMovies />

<Note>
  The route is asynchronous: it returns a task uid you can poll with the tasks route.
</Note>

<AccordionGroup>
  <Accordion title="What happens to duplicate ids?">
    A document whose primary key already exists replaces the stored one.
  </Accordion>
</AccordionGroup>

## Next steps

<CardGroup cols={2}>
  <Card title="Search the index" icon="magnifying-glass" href="/learn/search">
    Run your first query against the movies you added.
  </Card>
  <Card
    title="Filter results"
    href={`/learn/filtering?from=${"docs"}`}
  >
    Narrow results down with filterable attributes.
  </Card>
</CardGroup>
""",
    # Docusaurus: tabs from @theme, an admonition, a partial imported relative to the page
    "guides/install.mdx": """---
title: Install the server
---
import Tabs from '@theme/Tabs';
import TabItem from '@theme/TabItem';
import RequirementsPartial from './_requirements.mdx';

# Install the server

<RequirementsPartial />

<Tabs groupId="os">
  <TabItem value="mac" label="macOS" default>

    ```bash
    brew install movieserver
    ```

  </TabItem>
  <TabItem value="linux" label="Linux">

    ```bash
    curl -L https://example.com/install.sh | sh
    ```

  </TabItem>
</Tabs>

:::tip

Pin the version in production with `movieserver --version`.

:::

{/* TODO: add a Windows tab */}
""",
}

SNIPPETS = {
    "snippets/samples/code_samples_add_movies_1.mdx": """<CodeGroup>

```bash cURL
curl -X POST 'MEILI_URL/indexes/movies/documents' --data-binary @movies.json
```

```python Python
client.index('movies').add_documents(movies)
```

</CodeGroup>
""",
    "guides/_requirements.mdx": """The server needs **4 GB of RAM** and a 64-bit CPU with AVX2.
""",
    # under snippets/ but imported by nobody: still not a page (Mintlify renders nothing there)
    "snippets/unused.mdx": "An unused snippet.\n",
}


def write_mdx_site(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in {**PAGES, **SNIPPETS}.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root
