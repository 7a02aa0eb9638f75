/**
 * An emulator of OpenAI's Responses API in background mode, enough of it for the official `openai`
 * SDK to run unchanged against `baseURL` (which includes `/v1`). Behaviour follows the provider
 * digest in the shared spec (providers.md, part 1); where the real API is unverified the choice made
 * here is written beside the code. Time comes from the injected clock and every random draw from a
 * seeded generator, so a test on a virtual clock replays exactly.
 */
import { EventEmitter } from 'node:events';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SystemClock, type Clock } from '../../../src/core/clock.ts';
import { SeededRandom, type Random } from '../../../src/core/random.ts';
import {
  FAULTS_METADATA_KEY,
  FaultInputError,
  parseRequestFault,
  parseResponseFaults,
  type RequestFault,
  type ResponseFaults,
  type RouteName,
} from './faults.ts';
import { hexId, ResponseRun, type StreamEvent } from './responses.ts';
import {
  ApiError,
  inputText,
  invalid,
  parseFaultJson,
  parseMetadata,
  readJson,
  sendJson,
  startingAfter,
} from './wire.ts';
import { WebhookSender, type WebhookAttempt, type WebhookOptions } from './webhooks.ts';

export interface OpenAIEmulatorOptions {
  /** @default SystemClock */
  clock?: Clock;
  /** Seed for ids, jitter and duplicate draws. @default 1 */
  seed?: number;
  /** When set, requests must carry `Authorization: Bearer <apiKey>`; otherwise any key is accepted. */
  apiKey?: string;
  /** @default 50 */
  queuedMs?: number;
  /** @default 20 */
  deltaIntervalMs?: number;
  /** Relative spread of delta intervals, 0 for none. @default 0.5 */
  jitter?: number;
  /** The output text for an input. @default echoes the input after "You said: " */
  reply?: (input: string) => string;
  /** Forget every response this long after creation (404 afterwards). @default never */
  retentionMs?: number;
  /** Deliver terminal events of background responses here. @default no webhooks */
  webhook?: WebhookOptions;
}

export interface EmulatorEvents {
  created: [run: ResponseRun];
  terminal: [run: ResponseRun];
  webhook: [attempt: WebhookAttempt];
  /** Every HTTP request as it arrives (method and path with query), so a test can see what a client sent. */
  request: [request: { method: string; url: string }];
}

const TERMINAL_EVENTS = new Set([
  'response.completed',
  'response.failed',
  'response.incomplete',
  'response.cancelled',
]);

export class OpenAIEmulator extends EventEmitter<EmulatorEvents> {
  readonly clock: Clock;
  private readonly random: Random;
  private readonly runs = new Map<string, ResponseRun>();
  private readonly nextFaults: ResponseFaults[] = [];
  private readonly requestFaults: Array<RequestFault & { times: number }> = [];
  private readonly webhooks: WebhookSender | undefined;
  private server: Server | undefined;

  constructor(private readonly options: OpenAIEmulatorOptions = {}) {
    super();
    this.clock = options.clock ?? new SystemClock();
    this.random = new SeededRandom(options.seed ?? 1);
    this.webhooks = options.webhook
      ? new WebhookSender(options.webhook, this.clock, this.random, (a) => this.emit('webhook', a))
      : undefined;
  }

  /** Listens on 127.0.0.1 (port 0 unless given) and returns the SDK's `baseURL`, `/v1` included. */
  async start(port = 0): Promise<string> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, '127.0.0.1', () => resolve());
    });
    return `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`;
  }

  async close(): Promise<void> {
    await this.webhooks?.close();
    const server = this.server;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Faults for the next created response (queued in order; merged under any from metadata). */
  faultNext(faults: ResponseFaults): void {
    this.nextFaults.push(faults);
  }

  /** Answers the next `times` requests to `route` with `status` before they reach it. */
  failRequests(fault: RequestFault): void {
    this.requestFaults.push({ ...fault, times: fault.times ?? 1 });
  }

  /** The emulated response, including forgotten ones, for assertions. */
  run(id: string): ResponseRun | undefined {
    return this.runs.get(id);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.emit('request', { method: req.method ?? 'GET', url: req.url ?? '/' });
    res.setHeader('x-request-id', hexId(this.random, 'req_', 16));
    try {
      await this.route(req, res);
    } catch (err) {
      const e =
        err instanceof ApiError
          ? err
          : err instanceof FaultInputError
            ? invalid(err.message, err.field)
            : new ApiError(500, 'The server had an error processing your request.', 'server_error');
      if (res.headersSent) {
        res.destroy();
        return;
      }
      res.writeHead(e.status, { 'content-type': 'application/json', ...e.headers });
      res.end(JSON.stringify({ error: { message: e.message, type: e.type, param: e.param, code: e.code } }));
    }
  }

  private async route(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://emulator');
    const parts = url.pathname.split('/').filter(Boolean);
    const method = req.method ?? 'GET';

    if (parts[0] === '_emulator' && parts[1] === 'faults' && parts.length === 2 && method === 'POST') {
      return this.controlFaults(await readJson(req), res);
    }
    if (parts[0] !== 'v1' || parts[1] !== 'responses' || parts.length > 4) {
      throw new ApiError(404, `Invalid URL (${method} ${url.pathname})`, 'invalid_request_error');
    }
    this.authorize(req);
    const id = parts[2];
    let name: RouteName;
    if (id === undefined && method === 'POST') name = 'create';
    else if (id !== undefined && parts.length === 3 && (method === 'GET' || method === 'DELETE'))
      name = 'retrieve';
    else if (id !== undefined && parts[3] === 'cancel' && method === 'POST') name = 'cancel';
    else throw new ApiError(404, `Invalid URL (${method} ${url.pathname})`, 'invalid_request_error');
    this.injectRequestFault(name);

    if (name === 'create') return this.create(req, res);
    const run = this.lookup(id!);
    if (name === 'cancel') {
      if (!run.request.background) {
        throw invalid('Only responses created with background=true can be cancelled.', null);
      }
      return sendJson(res, run.cancel());
    }
    if (method === 'DELETE') {
      this.runs.delete(run.id);
      return sendJson(res, { id: run.id, object: 'response.deleted', deleted: true });
    }
    if (url.searchParams.get('stream') === 'true') {
      if (!run.request.background || !run.request.stream) {
        throw invalid('Only background responses created with stream=true can be streamed again.', 'stream');
      }
      return this.stream(res, run, startingAfter(url.searchParams.get('starting_after')));
    }
    sendJson(res, run.snapshot());
  }

  private authorize(req: IncomingMessage): void {
    if (this.options.apiKey === undefined) return;
    if (req.headers.authorization !== `Bearer ${this.options.apiKey}`) {
      throw new ApiError(
        401,
        'Incorrect API key provided.',
        'invalid_request_error',
        null,
        'invalid_api_key',
      );
    }
  }

  private injectRequestFault(route: RouteName): void {
    const fault = this.requestFaults.find((f) => f.times > 0 && (f.route === route || f.route === 'any'));
    if (!fault) return;
    fault.times--;
    const headers: Record<string, string> = {};
    if (fault.retryAfterMs !== undefined) {
      headers['retry-after-ms'] = String(fault.retryAfterMs);
      headers['retry-after'] = String(Math.ceil(fault.retryAfterMs / 1000));
    }
    if (fault.status === 429) {
      throw new ApiError(
        429,
        'Rate limit reached for requests.',
        'requests',
        null,
        'rate_limit_exceeded',
        headers,
      );
    }
    throw new ApiError(
      fault.status,
      'The server had an error while processing your request.',
      'server_error',
      null,
      null,
      headers,
    );
  }

  private lookup(id: string): ResponseRun {
    const run = this.runs.get(id);
    if (run && !run.forgotten) {
      const retention = run.faults.retentionMs ?? this.options.retentionMs;
      if (retention !== undefined && this.clock.now() - run.createdAtMs >= retention) run.forgotten = true;
    }
    if (!run || run.forgotten || !run.request.store) {
      throw new ApiError(404, `Response with id '${id}' not found.`, 'invalid_request_error', null, null);
    }
    return run;
  }

  private controlFaults(body: unknown, res: ServerResponse): void {
    if (typeof body !== 'object' || body === null)
      throw new FaultInputError('body', 'body must be an object');
    const { next, request } = body as { next?: unknown; request?: unknown };
    if (next !== undefined) this.faultNext(parseResponseFaults(next, 'next'));
    if (request !== undefined) this.failRequests(parseRequestFault(request, 'request'));
    sendJson(res, { ok: true });
  }

  private async create(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const body = await readJson(req);
    if (typeof body !== 'object' || body === null || Array.isArray(body)) {
      throw invalid('The request body must be a JSON object.', null);
    }
    const b = body as Record<string, unknown>;
    if (typeof b.model !== 'string' || b.model === '') {
      throw invalid("Missing required parameter: 'model'.", 'model', 'missing_required_parameter');
    }
    const input = inputText(b.input);
    const flag = (name: string, fallback: boolean): boolean => {
      const v = b[name];
      if (v === undefined || v === null) return fallback;
      if (typeof v !== 'boolean')
        throw invalid(`Invalid type for '${name}': expected a boolean.`, name, 'invalid_type');
      return v;
    };
    const background = flag('background', false);
    const stream = flag('stream', false);
    const store = flag('store', true);
    if (background && !store) {
      throw invalid('Background mode requires store=true.', 'store');
    }
    const metadata = parseMetadata(b.metadata);
    const fromMetadata =
      metadata[FAULTS_METADATA_KEY] !== undefined
        ? parseResponseFaults(
            parseFaultJson(metadata[FAULTS_METADATA_KEY]),
            `metadata.${FAULTS_METADATA_KEY}`,
          )
        : {};
    const faults = { ...(this.nextFaults.shift() ?? {}), ...fromMetadata };
    const reply = (this.options.reply ?? ((text: string) => `You said: ${text}`))(input);

    const run = new ResponseRun(
      { model: b.model, input, background, stream, store, metadata },
      faults,
      reply,
      this.clock,
      this.random,
      {
        queuedMs: this.options.queuedMs ?? 50,
        deltaIntervalMs: this.options.deltaIntervalMs ?? 20,
        jitter: this.options.jitter ?? 0.5,
      },
      { onTerminal: (r) => this.onTerminal(r) },
    );
    this.runs.set(run.id, run);
    this.emit('created', run);
    run.start();

    if (stream) return this.stream(res, run, -1);
    if (background) return sendJson(res, run.snapshot());
    // A synchronous response is answered when done, and dropping the connection cancels it (the docs'
    // only way to cancel one).
    await new Promise<void>((resolve) => {
      if (run.terminal) return resolve();
      const onEvent = (e: StreamEvent) => {
        if (TERMINAL_EVENTS.has(e.type)) {
          run.listeners.delete(onEvent);
          resolve();
        }
      };
      run.listeners.add(onEvent);
      res.on('close', () => {
        if (!run.terminal) run.cancel();
      });
    });
    if (!res.destroyed) sendJson(res, run.snapshot());
  }

  private stream(res: ServerResponse, run: ResponseRun, after: number): void {
    // Stream faults hit the first connection only, so a resume after a drop can succeed.
    const faults = run.streamConnections++ === 0 ? run.faults : {};
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache' });
    let written = 0;
    let done = false;
    const stop = () => {
      done = true;
      run.listeners.delete(write);
    };
    const drop = () => {
      stop();
      res.socket?.destroy();
    };
    const write = (event: StreamEvent) => {
      if (done) return;
      const terminal = TERMINAL_EVENTS.has(event.type);
      if (terminal && faults.endStreamWithoutTerminal) {
        stop();
        res.end();
        return;
      }
      written++;
      const frame = `event: ${event.type}\ndata: ${JSON.stringify(event)}\n\n`;
      if (faults.dropStreamAfterEvents !== undefined && written >= faults.dropStreamAfterEvents) {
        stop();
        res.write(frame, () => drop());
      } else if (terminal) {
        stop();
        res.end(frame);
      } else {
        res.write(frame);
      }
    };
    res.on('close', () => {
      stop();
      // Dropping the stream of a synchronous response cancels it; a background one runs on.
      if (!run.request.background && !run.terminal) run.cancel();
    });
    if (faults.dropStreamAfterEvents === 0) return drop();
    for (const event of run.events) if (event.sequence_number > after) write(event);
    if (done) return;
    if (run.terminal) {
      stop();
      res.end();
      return;
    }
    run.listeners.add(write);
  }

  private onTerminal(run: ResponseRun): void {
    this.emit('terminal', run);
    if (!this.webhooks || !run.request.background) return;
    const duplicates = run.faults.webhookDuplicates;
    const delayMs = run.faults.webhookDelayMs;
    this.webhooks.send(`response.${run.status}`, run.id, {
      ...(duplicates !== undefined ? { duplicates } : {}),
      ...(delayMs !== undefined ? { delayMs } : {}),
    });
  }
}
