import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  checkSnippets,
  extractSnippets,
  strayContexts,
  type Snippet,
} from './fixtures/doc-snippets';

/**
 * Every ```ts block of the docs compiles against the workspace sources, as its own ES module
 * (see docs/testing.md#code-in-the-docs for the `snippet context` comment and `ts nocheck`).
 */

const ROOT = join(__dirname, '..', '..', '..');

/** The pages checked, relative to the repository root. */
const PAGES = [
  'README.md',
  ...readdirSync(join(ROOT, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
  'packages/kafka/README.md',
  'packages/sqs/README.md',
  'packages/rabbitmq/README.md',
  'packages/http/README.md',
];

/** Blocks marked `ts nocheck`, by `file:line`, each with why it cannot compile. */
const NOCHECK: Readonly<Record<string, string>> = {};

const snippets = PAGES.flatMap((page) => extractSnippets(ROOT, page));
const nameOf = (snippet: Snippet): string => `${snippet.file}:${snippet.line}`;
const checked = snippets.filter((snippet) => !snippet.flags.includes('nocheck'));

let diagnostics: Map<string, string[]>;

beforeAll(() => {
  // One program for every block: the sources and their dependencies' types are read once.
  diagnostics = checkSnippets(ROOT, checked);
});

describe('code blocks in the docs compile', () => {
  it.each(checked.map((snippet) => [nameOf(snippet)]))('%s', (name) => {
    expect(diagnostics.get(name)).toEqual([]);
  });
});

describe('the conventions around them', () => {
  it('has a reason for each `ts nocheck` block, and no reason for a block that is gone', () => {
    const marked = snippets.filter((snippet) => snippet.flags.includes('nocheck')).map(nameOf);
    expect(marked.sort()).toEqual(Object.keys(NOCHECK).sort());
  });

  it.each(PAGES.map((page) => [page]))('%s has no snippet context above anything else', (page) => {
    const own = snippets.filter((snippet) => snippet.file === page);
    expect(strayContexts(ROOT, page, own)).toEqual([]);
  });
});
