import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { StreamableFile } from '@nestjs/common';
import {
  bodyFromBytes,
  headerPairs,
  type HeldResponse,
  type RequestBody,
  type RequestView,
} from '@justonce/http';
import type { IdempotentRequest } from '../options/types';

/**
 * What the interceptor reads of Nest's request on either platform: Express's `Request` (an
 * `IncomingMessage`) or Fastify's `FastifyRequest` (whose `raw` is one). @internal
 */
export interface PlatformRequest extends IdempotentRequest {
  body?: unknown;
  readonly originalUrl?: string;
  /** Fastify's Node request; absent on Express, whose request is the Node one. */
  readonly raw?: IncomingMessage;
}

type HeaderValue = number | string | readonly string[] | undefined;

/** What it reads and writes of Nest's response: Express's `Response` or Fastify's `FastifyReply`. @internal */
export interface PlatformResponse {
  readonly statusCode: number;
  getHeaders(): Readonly<Record<string, HeaderValue>>;
  getHeader(name: string): HeaderValue;
  /** Express: the Node method. */
  setHeader?(name: string, value: string | readonly string[]): unknown;
  /** Fastify. */
  header?(name: string, value: string | readonly string[]): unknown;
  status(code: number): unknown;
  /** Express. */
  readonly headersSent?: boolean;
  /** Fastify. */
  readonly sent?: boolean;
}

function nodeRequest(request: PlatformRequest): IncomingMessage {
  return request.raw ?? (request as unknown as IncomingMessage);
}

/** The `Idempotency-Key` field lines, distinct. @internal */
export function keyField(request: PlatformRequest): string[] | undefined {
  return nodeRequest(request).headersDistinct['idempotency-key'];
}

/** The engine's view of the request. @internal */
export function requestView(request: PlatformRequest): RequestView {
  return {
    method: request.method.toUpperCase(),
    target: request.originalUrl ?? request.url,
    header: (name) => {
      const value = request.headers[name.toLowerCase()];
      return Array.isArray(value) ? value.join(', ') : value;
    },
    body: () => requestBody(request),
  };
}

/**
 * The body as the platform parsed it. On Express, a body no parser took (a content type
 * Nest's parsers do not read) is read here and left in `request.body` as a Buffer, as the
 * Express adapter of `@justonce/http` does; Fastify refuses such a request itself.
 */
async function requestBody(request: PlatformRequest): Promise<RequestBody> {
  const contentType = request.headers['content-type'];
  const body = request.body;
  if (body === undefined || body === null) {
    const node = nodeRequest(request);
    if (request.raw !== undefined || !hasBody(node)) return { kind: 'none' };
    const chunks: Buffer[] = [];
    for await (const chunk of node)
      chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(`${chunk}`));
    const bytes = Buffer.concat(chunks);
    request.body = bytes;
    return bodyFromBytes(bytes, contentType);
  }
  if (body instanceof Uint8Array) return bodyFromBytes(body, contentType);
  if (typeof body === 'string') return bodyFromBytes(Buffer.from(body, 'utf8'), contentType);
  return { kind: 'json', value: body };
}

function hasBody(request: IncomingMessage): boolean {
  if (request.readableEnded) return false;
  const length = request.headers['content-length'];
  return (
    request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0')
  );
}

/** Whether the handler sent the response itself (`@Res()` without `passthrough`). @internal */
export function responseSent(response: PlatformResponse): boolean {
  return response.headersSent === true || response.sent === true;
}

function setHeader(response: PlatformResponse, name: string, value: string | string[]): void {
  // Express's res.set would add a charset to a content-type: the Node method keeps it exact.
  if (response.setHeader !== undefined) response.setHeader(name, value);
  else response.header?.(name, value);
}

/**
 * The handler's response, held: the status and headers it left on the response, and the
 * value it returned, serialized as Nest would (objects as JSON; strings as text, with the
 * platform's content type; bytes and `StreamableFile`s as they are). @internal
 */
export async function holdResponse(
  value: unknown,
  request: PlatformRequest,
  response: PlatformResponse,
): Promise<HeldResponse> {
  const { bytes, type } = await serialize(value, request.raw !== undefined);
  if (type !== undefined && response.getHeader('content-type') === undefined) {
    setHeader(response, 'content-type', type);
  }
  return { status: response.statusCode, headers: headerPairs(response.getHeaders()), body: bytes };
}

async function serialize(
  value: unknown,
  fastify: boolean,
): Promise<{ bytes: Uint8Array; type?: string }> {
  if (value === undefined || value === null) return { bytes: new Uint8Array() };
  if (value instanceof StreamableFile) {
    const { type } = value.getHeaders();
    const bytes = await readAll(value.getStream());
    return type === undefined ? { bytes } : { bytes, type };
  }
  if (value instanceof Uint8Array) return { bytes: value, type: 'application/octet-stream' };
  if (typeof value === 'string') {
    const type = fastify ? 'text/plain; charset=utf-8' : 'text/html; charset=utf-8';
    return { bytes: Buffer.from(value, 'utf8'), type };
  }
  const json = JSON.stringify(value) ?? '';
  return { bytes: Buffer.from(json, 'utf8'), type: 'application/json; charset=utf-8' };
}

async function readAll(stream: Readable): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of stream)
    chunks.push(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk as string));
  return Buffer.concat(chunks);
}

/** Puts the status and headers of a response the handler did not make on the response. @internal */
export function writeHead(response: PlatformResponse, held: HeldResponse): void {
  const grouped = new Map<string, string[]>();
  for (const [name, value] of held.headers)
    grouped.set(name, [...(grouped.get(name) ?? []), value]);
  response.status(held.status);
  for (const [name, values] of grouped) {
    setHeader(response, name, values.length === 1 ? (values[0] ?? '') : values);
  }
}

/** The body of a held response, for Nest to send as it is. @internal */
export function bodyOf(held: HeldResponse): StreamableFile {
  const bytes = Buffer.from(held.body);
  return new StreamableFile(bytes, { length: bytes.byteLength });
}
