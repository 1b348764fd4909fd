#!/usr/bin/env node
// The `platform-sim` command. Registers the TypeScript loader so the simulator's sources run as they are.
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli.ts');
process.exitCode = await main(process.argv.slice(2));
