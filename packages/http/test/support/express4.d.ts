/**
 * Express 4, installed under the alias `express4` beside Express 5 so that the same tests run
 * on both. Typed as Express 5: the tests use only what both versions share.
 */
declare module 'express4' {
  import express from 'express';

  export default express;
}
