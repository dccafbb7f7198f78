// The hello workload served by the MCP TypeScript SDK v2: `my-plugin-count-posts`, the `site`
// example's SQLite count of published posts of one type (examples/shared/site.rs), answering
// {"result": N}.
//
// Run: node bench/peers/node/hello.mjs --port 8114 [--workers 2] [--db site.db]
// The primary creates and seeds the database first (as the Rust `site` example's Db::open
// does); prints http://127.0.0.1:PORT/mcp once every worker listens.

import { parseArgs } from 'node:util';

import { McpServer } from '@modelcontextprotocol/server';
import Database from 'better-sqlite3';
import * as z from 'zod';

import { serve, structured } from './serve.mjs';

const { values: args } = parseArgs({
    options: {
        port: { type: 'string', default: '8114' },
        workers: { type: 'string', default: '2' },
        db: { type: 'string', default: 'site.db' }
    }
});

// The seed of a new database, as examples/shared/site.rs has it: [type, title, status, author].
const SEED = [
    ['post', 'Hello world', 'publish', 1],
    ['post', 'Second thoughts', 'publish', 2],
    ['post', 'Unfinished', 'draft', 1],
    ['page', 'About', 'publish', null],
    ['attachment', 'logo.png', 'publish', null]
];

/** Create and seed the database if it is new, exactly as the Rust `Db::open` does. */
function prepare() {
    const db = new Database(args.db);
    try {
        db.pragma('journal_mode = WAL');
        db.exec(`CREATE TABLE IF NOT EXISTS users (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     name TEXT NOT NULL
                 );
                 CREATE TABLE IF NOT EXISTS posts (
                     id INTEGER PRIMARY KEY AUTOINCREMENT,
                     post_type TEXT NOT NULL,
                     title TEXT NOT NULL,
                     content TEXT NOT NULL,
                     status TEXT NOT NULL,
                     author_id INTEGER REFERENCES users (id)
                 );`);
        if (!db.pragma('table_info(posts)').some(c => c.name === 'author_id')) {
            db.exec('ALTER TABLE posts ADD COLUMN author_id INTEGER');
        }
        db.transaction(() => {
            if (db.prepare('SELECT COUNT(*) AS n FROM users').get().n === 0) {
                db.exec("INSERT INTO users (name) VALUES ('Ada'), ('Grace')");
            }
            if (db.prepare('SELECT COUNT(*) AS n FROM posts').get().n === 0) {
                const insert = db.prepare(
                    'INSERT INTO posts (post_type, title, content, status, author_id) VALUES (?, ?, ?, ?, ?)'
                );
                for (const [type, title, status, author] of SEED) insert.run(type, title, `${title}, in full.`, status, author);
            }
        })();
    } finally {
        db.close();
    }
}

const countPosts = {
    description: 'Count published posts of one type.',
    annotations: { readOnlyHint: true },
    inputSchema: z.object({ input: z.enum(['post', 'page', 'attachment']) }),
    outputSchema: z.object({ result: z.number().int() })
};

await serve({
    port: Number(args.port),
    workers: Number(args.workers),
    prepare,
    async makeFactory() {
        // One connection and one prepared statement per worker, shared by every call.
        const db = new Database(args.db);
        const count = db.prepare("SELECT COUNT(*) AS n FROM posts WHERE post_type = ? AND status = 'publish'");
        return () => {
            const server = new McpServer({ name: 'site', version: '0.1.0' });
            server.registerTool('my-plugin-count-posts', countPosts, async ({ input }) =>
                structured({ result: count.get(input).n })
            );
            return server;
        };
    }
});
