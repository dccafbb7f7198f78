// Serving shared by the TypeScript SDK v2 peers (shop.mjs, hello.mjs): a `node:cluster` of
// workers, each a plain `node:http` server on 127.0.0.1 answering at /mcp through the SDK's
// `createMcpHandler` (a fresh McpServer from the factory per request: 2026-07-28 requests, and
// 2025-era requests through its stateless fallback), with JSON answers.

import cluster from 'node:cluster';
import { createServer } from 'node:http';

import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node';
import { createMcpHandler } from '@modelcontextprotocol/server';

/**
 * In the primary: run `prepare`, fork `workers` workers and print the URL once all listen.
 * In a worker: `await makeFactory()` (its clients), then serve the factory's servers on `port`.
 */
export async function serve({ port, workers, prepare, makeFactory }) {
    const url = `http://127.0.0.1:${port}/mcp`;
    if (cluster.isPrimary) {
        await prepare?.();
        let listening = 0;
        cluster.on('listening', () => {
            if (++listening === workers) console.log(url);
        });
        cluster.on('exit', (worker, code, signal) => {
            if (!stopping) console.error(`worker ${worker.process.pid} exited (${signal ?? code})`);
        });
        let stopping = false;
        const stop = () => {
            stopping = true;
            for (const worker of Object.values(cluster.workers)) worker.kill();
            process.exit(0);
        };
        process.on('SIGINT', stop);
        process.on('SIGTERM', stop);
        for (let i = 0; i < workers; i++) cluster.fork();
        return;
    }
    const factory = await makeFactory();
    const handler = toNodeHandler(
        createMcpHandler(factory, { responseMode: 'json', onerror: error => console.error(error) })
    );
    const validateHost = localhostHostValidation();
    const validateOrigin = localhostOriginValidation();
    createServer(async (req, res) => {
        if (!validateHost(req, res) || !validateOrigin(req, res)) return;
        if (new URL(req.url, 'http://localhost').pathname !== '/mcp') {
            res.writeHead(404).end();
            return;
        }
        await handler(req, res);
    }).listen(port, '127.0.0.1');
}

/** A tool's answer: the JSON as text and as `structuredContent`. */
export function structured(value) {
    return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value };
}
