import { readdirSync, readFileSync, existsSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import ts from 'typescript';

/**
 * Core's folders in layers, the ground floor first: a file may import from its own folder and
 * from folders of lower layers only. Folders of one layer do not import each other. The
 * entries (`index.ts`, `transport-kit.ts`) stand above everything.
 */
const LAYERS: readonly (readonly string[])[] = [
  ['common'],
  ['errors'],
  ['config', 'transactions'],
  ['observability', 'retry', 'adapters'],
  ['store'],
  ['transport', 'messages'],
  ['outbox', 'operations', 'retention', 'dead-letters', 'debezium'],
  ['relay', 'inbox'],
  ['consumer', 'resilience'],
  ['admin'],
  ['testing'],
];
const ENTRIES = ['index.ts', 'transport-kit.ts'];

const SRC = resolve(__dirname, '../src');

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.name.endsWith('.ts') && !entry.name.endsWith('.test.ts') ? [path] : [];
  });
}

/** The file a relative import names, as TypeScript resolves it. */
function target(from: string, specifier: string): string {
  const base = resolve(dirname(from), specifier);
  for (const candidate of [`${base}.ts`, join(base, 'index.ts'), base]) {
    if (existsSync(candidate) && candidate.endsWith('.ts')) return candidate;
  }
  throw new Error(`${relative(SRC, from)}: cannot resolve ${specifier}`);
}

function layerOf(file: string): { folder: string; layer: number } {
  const path = relative(SRC, file);
  if (ENTRIES.includes(path)) return { folder: path, layer: LAYERS.length };
  const folder = path.split('/')[0] ?? path;
  const layer = LAYERS.findIndex((names) => names.includes(folder));
  if (layer < 0) throw new Error(`${path}: folder ${folder} has no layer in layers.test.ts`);
  return { folder, layer };
}

/** Every import between two folders of core's sources, as "from -> to". */
function crossFolderImports(): { from: string; to: string; fromLayer: number; toLayer: number }[] {
  const found = [];
  for (const file of sourceFiles(SRC)) {
    const { importedFiles } = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    for (const { fileName } of importedFiles) {
      if (!fileName.startsWith('.')) continue;
      const to = target(file, fileName);
      const a = layerOf(file);
      const b = layerOf(to);
      if (a.folder === b.folder) continue;
      found.push({
        from: relative(SRC, file),
        to: relative(SRC, to),
        fromLayer: a.layer,
        toLayer: b.layer,
      });
    }
  }
  return found;
}

describe("core's layers", () => {
  const imports = crossFolderImports();

  it('reads the import graph', () => {
    // A guard against a check that passes because it read nothing.
    expect(imports.length).toBeGreaterThan(200);
  });

  it('has every import run down to a lower layer', () => {
    const upward = imports
      .filter((i) => i.toLayer >= i.fromLayer)
      .map((i) => `${i.from} -> ${i.to}`);
    expect(upward).toEqual([]);
  });

  it('keeps common/ free of the rest of core', () => {
    expect(imports.filter((i) => i.from.startsWith('common/'))).toEqual([]);
  });
});
