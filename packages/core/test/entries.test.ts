import * as admin from '@justonce/core/admin';
import * as drizzle from '@justonce/core/drizzle';
import * as kysely from '@justonce/core/kysely';
import * as pg from '@justonce/core/pg';
import * as retry from '@justonce/core/retry';
import * as root from '@justonce/core';
import * as testing from '@justonce/core/testing';
import * as transport from '@justonce/core/transport';
import * as typeorm from '@justonce/core/typeorm';

/**
 * The names each entry of @justonce/core exports at run time (types leave no trace here), so
 * that a change to any entry shows up in review as a change to the snapshot. Under `CI=true`
 * Jest writes no snapshot: a new entry fails until its snapshot is committed.
 */
const ENTRIES: Record<string, object> = {
  '@justonce/core': root,
  '@justonce/core/transport': transport,
  '@justonce/core/retry': retry,
  '@justonce/core/admin': admin,
  '@justonce/core/testing': testing,
  '@justonce/core/pg': pg,
  '@justonce/core/kysely': kysely,
  '@justonce/core/drizzle': drizzle,
  '@justonce/core/typeorm': typeorm,
};

describe('entry points', () => {
  it.each(Object.keys(ENTRIES))('%s exports the names in its snapshot', (name) => {
    expect(Object.keys(ENTRIES[name] ?? {}).sort()).toMatchSnapshot();
  });

  it("leaves the transport kit's new helpers off the root", () => {
    for (const helper of ['asError', 'errorText', 'sleep', 'withTimeout', 'NEVER_ABORTED']) {
      expect(transport).toHaveProperty(helper);
      expect(root).not.toHaveProperty(helper);
    }
  });
});
