/**
 * The gRPC rows of `npm run bench:host`: non-blocking SendMessage and GetTask against our host's gRPC
 * binding from an in-process grpc-js client (one channel, bounded concurrency, loopback only, bounded
 * time). wrk speaks no gRPC, so the client here is Node: its cost on the shared cores is not the
 * server's, which is why the server's own CPU per request is the figure to compare with the HTTP rows.
 */
import * as grpc from '@grpc/grpc-js';
import { closedLoop } from './closed-loop.ts';
import { A2A_SERVICE, a2aPackageDefinition, toWire } from '../../src/protocols/a2a/grpc/codec.ts';

type Unary = (
  req: unknown,
  md: grpc.Metadata,
  cb: (err: grpc.ServiceError | null, res: { task?: { id: string } } & Record<string, unknown>) => void,
) => void;

export interface GrpcPhase {
  rps: number;
  p99: number;
  requests: number;
}

export interface GrpcLoad {
  /** `total` non-blocking sends (messageIds `${prefix}-n`), at most `concurrency` in flight. */
  sends(total: number, concurrency: number, prefix: string): Promise<GrpcPhase>;
  /** `total` GetTask calls of one task. */
  gets(total: number, concurrency: number, taskId: string): Promise<GrpcPhase>;
  /** One non-blocking send; returns the task id. */
  sendOne(messageId: string): Promise<string>;
  close(): void;
}

export function grpcLoad(target: string): GrpcLoad {
  const Client = grpc.makeGenericClientConstructor(
    a2aPackageDefinition()[A2A_SERVICE] as grpc.ServiceDefinition,
    'A2AService',
  );
  const client = new Client(target, grpc.credentials.createInsecure()) as unknown as grpc.Client &
    Record<string, Unary>;
  const md = new grpc.Metadata();
  md.set('a2a-version', '1.0');
  const unary = (method: string, req: unknown) =>
    new Promise<Record<string, unknown> & { task?: { id: string } }>((resolve, reject) =>
      client[method]!(req, md, (err, res) => (err ? reject(err) : resolve(res))),
    );
  const send = (messageId: string) =>
    toWire('lf.a2a.v1.SendMessageRequest', {
      message: { messageId, role: 'ROLE_USER', parts: [{ text: 'hi' }] },
      configuration: { returnImmediately: true },
    });
  return {
    async sendOne(messageId) {
      const res = await unary('SendMessage', send(messageId));
      return res.task!.id;
    },
    sends: (total, concurrency, prefix) => {
      let n = 0;
      return closedLoop(total, concurrency, () => unary('SendMessage', send(`${prefix}-${++n}`)));
    },
    gets: (total, concurrency, taskId) => {
      const req = toWire('lf.a2a.v1.GetTaskRequest', { id: taskId });
      return closedLoop(total, concurrency, () => unary('GetTask', req));
    },
    close: () => client.close(),
  };
}
