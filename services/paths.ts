import path from 'node:path';

/** The repository root (this file lives in `<root>/services`). */
export const REPO_ROOT = path.resolve(__dirname, '..');

/**
 * The one place where launched services keep their state: jars, configuration, data, pid
 * files, locks and logs. Git ignores it.
 */
export const SERVICES_DIR = path.join(REPO_ROOT, '.services');

/** All service logs, one file per process. */
export const LOGS_DIR = path.join(SERVICES_DIR, 'logs');

/** The Maven projects that name the jars of the Java services. */
export const MAVEN_DIR = path.join(REPO_ROOT, 'services', 'maven');

/** A path relative to the repository root, for messages. */
export function shown(file: string): string {
  return path.relative(process.cwd(), file) || '.';
}
