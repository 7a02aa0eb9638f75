import { contentBytes, type ArtifactRef, type ContentPart, type Envelope } from '../core/envelope.ts';
import { inputHash } from '../core/canonical-json.ts';
import { isTaskplaneError, TaskplaneError } from '../core/errors.ts';
import type { RemoteArtifact } from '../connectors/connector.ts';
import { connectorFor, remoteCall, type PlaneContext } from './context.ts';

/** One artifact with its content, from the envelope or read through from the remote. */
export interface ArtifactContent {
  artifactId: string;
  name: string | null;
  mediaType: string | null;
  hash: string;
  size: number;
  parts: ContentPart[];
  /** `kept`: stored on the envelope; `remote`: over the result caps, read from the remote just now. */
  from: 'kept' | 'remote';
}

/** An artifact's content as neutral parts; from a connector that gives none, its content as it is. */
export function neutralParts(a: RemoteArtifact): ContentPart[] {
  if (a.parts) return a.parts;
  const content = a.content ?? null;
  return [typeof content === 'string' ? { kind: 'text', text: content } : { kind: 'data', data: content }];
}

function fromRef(ref: ArtifactRef, parts: ContentPart[], from: ArtifactContent['from']): ArtifactContent {
  return {
    artifactId: ref.artifactId,
    name: ref.name ?? null,
    mediaType: ref.mediaType ?? null,
    hash: ref.hash,
    size: ref.size ?? contentBytes(parts),
    parts,
    from,
  };
}

/**
 * The content of an envelope's artifacts (all, or the one named). Content the envelope did not keep is
 * read with one `get` from the remote, and only while the remote still knows the job: when it does
 * not, the answer is `not_found` saying so, never an empty artifact. A read does not write: what the
 * remote says here reaches the envelope through the usual observation paths.
 */
export async function readArtifacts(
  ctx: PlaneContext,
  env: Envelope,
  artifactId?: string,
): Promise<ArtifactContent[]> {
  const refs =
    artifactId === undefined ? env.artifacts : env.artifacts.filter((a) => a.artifactId === artifactId);
  if (artifactId !== undefined && refs.length === 0)
    throw new TaskplaneError('not_found', `artifactId: no artifact '${artifactId}' on this task`, {
      field: 'artifactId',
    });
  if (refs.every((r) => r.parts)) return refs.map((r) => fromRef(r, r.parts!, 'kept'));

  const remote = await fetchRemote(ctx, env);
  return refs.map((ref) => {
    if (ref.parts) return fromRef(ref, ref.parts, 'kept');
    const found = remote.find((a) => a.artifactId === ref.artifactId);
    if (!found)
      throw new TaskplaneError(
        'not_found',
        `artifact '${ref.artifactId}': its content was over the result caps and the remote no longer has it`,
      );
    const parts = neutralParts(found);
    // The remote's artifact may have grown since it was observed; its own hash and size describe it.
    return {
      ...fromRef(ref, parts, 'remote'),
      hash: inputHash(found.content ?? null),
      size: contentBytes(parts),
    };
  });
}

async function fetchRemote(ctx: PlaneContext, env: Envelope): Promise<RemoteArtifact[]> {
  if (env.remoteId === null)
    throw new TaskplaneError('not_found', 'artifact content: the task was never bound to a remote job');
  const remoteId = env.remoteId;
  const connector = connectorFor(ctx, env.target);
  try {
    const snap = await remoteCall(ctx, 'get', env, (signal) => connector.get(remoteId, signal));
    return snap.artifacts ?? [];
  } catch (err) {
    if (isTaskplaneError(err) && err.code === 'not_found')
      throw new TaskplaneError(
        'not_found',
        'artifact content: over the result caps, and the remote no longer has the task',
      );
    throw err;
  }
}
