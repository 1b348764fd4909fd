#!/usr/bin/env node
// The `mercato` command. Registers the TypeScript loader so service.config.ts and routes/*.ts load as they are.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
process.exitCode = await main(process.argv.slice(2));
