import { A2A_PROTOCOL_VERSION, type AgentCard, type AgentInterface } from '../protocols/a2a/types.ts';
import { A2A_V03_VERSION } from '../protocols/a2a/v03/wire.ts';
import type { AgentCardInfo } from './agent-api.ts';

/** URI of our SSE resume extension (declared in the card; optional for clients). */
export const LAST_EVENT_ID_EXTENSION = 'https://taskplane.dev/a2a/extensions/last-event-id/v1';

export const JSONRPC_PATH = '/a2a/jsonrpc';
export const REST_PATH = '/a2a/rest';

/** The card's gRPC interface: its URL is `host:port`, the target a gRPC client dials. */
export function grpcInterface(target: string): AgentInterface {
  return { url: target, protocolBinding: 'GRPC', protocolVersion: A2A_PROTOCOL_VERSION };
}

/**
 * The card (A2A 1.0, agent card): both HTTP bindings, then any `extraInterfaces` (gRPC when it is on), then
 * both HTTP bindings again at A2A 0.3, capabilities that say exactly what the host enforces (streaming and
 * push on, an extended card when the agent has one), the Last-Event-ID extension, and the bearer scheme when keys are on.
 */
export function buildAgentCard(
  info: AgentCardInfo,
  baseUrl: string,
  auth: 'none' | 'keys',
  extended = false,
  extraInterfaces: AgentInterface[] = [],
): AgentCard {
  const card: AgentCard = {
    name: info.name,
    description: info.description,
    version: info.version,
    supportedInterfaces: [
      { url: baseUrl + JSONRPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: A2A_PROTOCOL_VERSION },
      { url: baseUrl + REST_PATH, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_PROTOCOL_VERSION },
      ...extraInterfaces,
      // The same URLs answer A2A 0.3 (protocols/a2a/v03; HTTP+JSON under `/v1`): one interface per
      // version, as A2A 1.0, agent card, lists a binding served at two versions.
      { url: baseUrl + JSONRPC_PATH, protocolBinding: 'JSONRPC', protocolVersion: A2A_V03_VERSION },
      { url: baseUrl + REST_PATH, protocolBinding: 'HTTP+JSON', protocolVersion: A2A_V03_VERSION },
    ],
    capabilities: {
      streaming: true,
      pushNotifications: true,
      extendedAgentCard: extended,
      extensions: [
        {
          uri: LAST_EVENT_ID_EXTENSION,
          description:
            'SubscribeToTask honours the SSE Last-Event-ID header: it replays the persisted events after that id, then streams live ones. Every SSE event carries an id.',
          required: false,
        },
      ],
    },
    defaultInputModes: info.defaultInputModes ?? ['text/plain', 'application/json'],
    defaultOutputModes: info.defaultOutputModes ?? ['text/plain', 'application/json'],
    skills: info.skills ?? [],
  };
  if (info.provider) card.provider = info.provider;
  if (info.documentationUrl) card.documentationUrl = info.documentationUrl;
  if (auth === 'keys') {
    card.securitySchemes = {
      bearer: { httpAuthSecurityScheme: { scheme: 'Bearer', description: 'taskplane host API key' } },
    };
    card.securityRequirements = [{ schemes: { bearer: { list: [] } } }];
  }
  return card;
}
