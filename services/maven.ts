import { createHash } from 'node:crypto';
import { existsSync, readFileSync, promises as fs } from 'node:fs';
import path from 'node:path';
import { LOGS_DIR, MAVEN_DIR, shown } from './paths';
import { findExecutable, logTail, runLogged } from './processes';

/** The Maven project (under `services/maven/<project>/pom.xml`) that names a service's jars. */
export type MavenProject = 'kafka' | 'elasticmq' | 'connect' | 'debezium';

/** The pom of a Maven project. */
export function pomOf(project: MavenProject): string {
  return path.join(MAVEN_DIR, project, 'pom.xml');
}

/** Reads a `<properties>` value from a project's pom, e.g. the Kafka version. */
export function pomProperty(project: MavenProject, name: string): string {
  const pom = readFileSync(pomOf(project), 'utf8');
  const escaped = name.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const value = new RegExp(`<${escaped}>([^<]+)</${escaped}>`).exec(pom)?.[1];
  if (!value) throw new Error(`${shown(pomOf(project))} has no <${name}> property`);
  return value.trim();
}

/**
 * Makes sure `libDir` holds the runtime jars named by the project's pom. Maven downloads them
 * from Maven Central into `~/.m2` (cached across checkouts) and copies them into `libDir`
 * (cached across runs); a stamp with the pom's hash makes later calls free until the pom
 * changes. Callers hold the service's lock.
 */
export async function resolveJars(project: MavenProject, libDir: string): Promise<void> {
  const pom = pomOf(project);
  const hash = createHash('sha256').update(readFileSync(pom)).digest('hex');
  const stamp = path.join(libDir, '.resolved');
  if (existsSync(stamp) && (await fs.readFile(stamp, 'utf8')) === hash) return;

  const mvn = findExecutable('mvn');
  if (!mvn) {
    throw new Error(
      `Maven (mvn) is not installed, and it is needed once to download the ${project} jars ` +
        'from Maven Central. Install Maven 3.8+ (e.g. `apt-get install maven`), or use Docker.',
    );
  }
  const logFile = path.join(LOGS_DIR, `maven-${project}.log`);
  const staging = `${libDir}.partial`;
  await fs.rm(staging, { recursive: true, force: true });
  try {
    await runLogged(
      mvn,
      ['-B', '-q', '-f', pom, 'dependency:copy-dependencies', `-DoutputDirectory=${staging}`],
      logFile,
    );
  } catch (error) {
    throw new Error(
      `Could not download the ${project} jars with Maven (${(error as Error).message}). ` +
        `See ${shown(logFile)}:\n${await logTail(logFile)}`,
    );
  }
  await fs.writeFile(path.join(staging, '.resolved'), hash);
  await fs.rm(libDir, { recursive: true, force: true });
  await fs.rename(staging, libDir);
}
