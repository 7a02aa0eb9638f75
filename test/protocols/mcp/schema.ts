import { readFileSync } from 'node:fs';
import { Ajv2020 } from 'ajv/dist/2020.js';

/**
 * The tasks extension's JSON Schema (copied beside this file from modelcontextprotocol/ext-tasks
 * `schema/draft/schema.json`), compiled once. `validateFormats: false`: the schema's only format is
 * `uri` on elicitation URLs, which says nothing about the task wire shapes under test.
 */
const schema = JSON.parse(readFileSync(new URL('./ext-tasks.schema.json', import.meta.url), 'utf8')) as {
  $id: string;
};
const ajv = new Ajv2020({ strict: false, allErrors: true, validateFormats: false });
ajv.addSchema(schema);

export function validator(def: string): (value: unknown) => string | null {
  const validate = ajv.getSchema(`${schema.$id}#/$defs/${def}`);
  if (validate === undefined) throw new Error(`no $defs/${def} in the schema`);
  return (value) => (validate(value) ? null : ajv.errorsText(validate.errors));
}
