/**
 * `pnpm bench <name>` runs `benchmarks/<name>.ts`. Each benchmark measures its own baseline
 * in the same process, prints what each side cost per message (this process's CPU,
 * PostgreSQL's CPU, statements sent: costMeter in benchmarks/_support.ts) and ends with one
 * JSON line: {"bench": name, "results": [...]}.
 */
import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

async function main(): Promise<void> {
  const dir = join(__dirname, '..', 'benchmarks');
  const available = existsSync(dir)
    ? readdirSync(dir)
        .filter((f) => f.endsWith('.ts') && !f.startsWith('_'))
        .map((f) => f.slice(0, -3))
    : [];
  const name = process.argv[2];
  if (!name || !available.includes(name)) {
    console.error(`usage: pnpm bench <${available.join('|') || 'name'}>`);
    process.exitCode = 2;
    return;
  }
  const mod = (await import(join(dir, `${name}.ts`))) as { main?: () => Promise<void> };
  if (typeof mod.main !== 'function') throw new Error(`benchmarks/${name}.ts exports no main()`);
  await mod.main();
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
