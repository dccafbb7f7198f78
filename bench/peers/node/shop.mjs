// The shop workload (bench/shared/shop.rs) served by the MCP TypeScript SDK v2: the same three
// tools, the same Redis commands and API calls per call, the same structured answers.
//
// Run: node bench/peers/node/shop.mjs --port 8104 [--workers 2] [--redis URL] [--api URL] [--name ts-sdk]
// Prints http://127.0.0.1:PORT/mcp once every worker listens.

import { parseArgs } from 'node:util';

import { McpServer } from '@modelcontextprotocol/server';
import { Redis } from 'ioredis';
import * as z from 'zod';

import { serve, structured } from './serve.mjs';

const { values: args } = parseArgs({
    options: {
        port: { type: 'string', default: '8104' },
        workers: { type: 'string', default: '2' },
        redis: { type: 'string', default: 'redis://127.0.0.1:6390' },
        api: { type: 'string', default: 'http://127.0.0.1:8100' },
        name: { type: 'string', default: 'ts-sdk' }
    }
});
const api = args.api.replace(/\/+$/, '');
const serverType = args.name;

/** The user a load client acts as: `user-00001`... */
const user = n => `user-${String(n).padStart(5, '0')}`;
const isCount = v => Number.isInteger(v) && v >= 0;

/** The API's JSON answer (global fetch: undici's keep-alive pool), or the tool's error. */
async function apiJson(path, init) {
    const url = `${api}${path}`;
    let response;
    try {
        response = await fetch(url, init);
    } catch (error) {
        throw new Error(`api: ${error.message} (${url})`);
    }
    if (!response.ok) throw new Error(`api: ${response.status} ${response.statusText} for url (${url})`);
    return response.json();
}

const cartItem = z.object({
    product_id: z.number().int().min(0).describe("The product's id."),
    quantity: z.number().int().min(0).describe('How many.')
});

const tools = {
    search_products: {
        description:
            'Search the catalog: a category\'s products in a price range, cheapest first, with the ten most popular products\' ids.',
        annotations: { readOnlyHint: true },
        inputSchema: z.object({
            category: z.string().default('Electronics').describe('The category (default `Electronics`).'),
            min_price: z.number().default(50).describe('Lowest price (default 50).'),
            max_price: z.number().default(500).describe('Highest price (default 500).'),
            limit: z.number().int().min(0).default(10).describe('How many products (default 10).')
        }),
        outputSchema: z.object({
            category: z.string(),
            total_found: z.unknown(),
            products: z.array(
                z.object({
                    id: z.number().int(),
                    sku: z.unknown(),
                    name: z.unknown(),
                    price: z.unknown(),
                    rating: z.unknown(),
                    popularity_rank: z.number().int().nullable()
                })
            ),
            top10_popular_ids: z.array(z.number().int()),
            server_type: z.string()
        })
    },
    get_user_cart: {
        description: "A user's cart, with their five most recent orders.",
        annotations: { readOnlyHint: true },
        inputSchema: z.object({
            user_id: z.string().default(user(42)).describe('The user (default `user-00042`).')
        }),
        outputSchema: z.object({
            user_id: z.string(),
            cart: z.object({ items: z.array(z.unknown()), item_count: z.number().int(), estimated_total: z.number() }),
            recent_history: z.array(z.unknown()),
            server_type: z.string()
        })
    },
    checkout: {
        description: "Check out a cart: price it, count the user's orders and record the order.",
        inputSchema: z.object({
            user_id: z.string().default(user(42)).describe('The user (default `user-00042`).'),
            items: z
                .array(cartItem)
                .default([
                    { product_id: 42, quantity: 2 },
                    { product_id: 1337, quantity: 1 }
                ])
                .describe('What is bought (default two of product 42 and one of product 1337).')
        }),
        outputSchema: z.object({
            order_id: z.unknown(),
            user_id: z.string(),
            total: z.unknown(),
            items_count: z.unknown(),
            rate_limit_count: z.number().int(),
            status: z.string(),
            server_type: z.string()
        })
    }
};

/** The tools' work over one Redis connection and the API. */
function handlers(redis) {
    return {
        async search_products({ category, min_price, max_price, limit }) {
            const query = new URLSearchParams({
                category,
                min_price: String(min_price),
                max_price: String(max_price),
                limit: String(limit)
            });
            // The API's search and Redis' ten most popular, at once.
            const [found, popular] = await Promise.all([
                apiJson(`/products/search?${query}`),
                redis.zrevrange('bench:popular', 0, 9)
            ]);
            const top = popular.filter(m => /^product:\d+$/.test(m)).map(m => Number(m.slice(8)));
            if (!Array.isArray(found.products)) throw new Error('api: the search answered no products');
            const products = found.products.map(p => {
                const id = isCount(p.id) ? p.id : 0;
                const rank = top.indexOf(id);
                return {
                    id,
                    sku: p.sku ?? null,
                    name: p.name ?? null,
                    price: p.price ?? null,
                    rating: p.rating ?? null,
                    popularity_rank: rank < 0 ? null : rank + 1
                };
            });
            return structured({
                category,
                total_found: found.total_found ?? null,
                products,
                top10_popular_ids: top,
                server_type: serverType
            });
        },

        async get_user_cart({ user_id }) {
            const cart = await redis.hgetall(`bench:cart:${user_id}`);
            let items = [];
            if (cart.items !== undefined) {
                try {
                    items = JSON.parse(cart.items);
                } catch (error) {
                    throw new Error(`redis: the cart's items are not JSON: ${error.message}`);
                }
            }
            const first = items[0]?.product_id;
            // Then, at once, the last five orders and the cart's first product.
            const [history, product] = await Promise.all([
                redis.lrange(`bench:history:${user_id}`, 0, 4),
                isCount(first) ? apiJson(`/products/${first}`) : null
            ]);
            const price = typeof product?.price === 'number' ? product.price : 0;
            const count = items.reduce((sum, i) => sum + (isCount(i?.qty) ? i.qty : 0), 0);
            const recent = [];
            for (const entry of history) {
                try {
                    recent.push(JSON.parse(entry));
                } catch {
                    // An entry that is not JSON is left out.
                }
            }
            return structured({
                user_id,
                cart: { items, item_count: items.length, estimated_total: Math.round(price * count * 100) / 100 },
                recent_history: recent,
                server_type: serverType
            });
        },

        async checkout({ user_id, items }) {
            if (items.length === 0) throw new Error('checkout needs at least one item');
            const digits = user_id.startsWith('user-') ? user_id.slice(5) : '';
            const number = /^\d+$/.test(digits) ? Number(digits) : 0;
            const now = Date.now();
            const entry = JSON.stringify({ order_id: `ORD-${user_id}-${now}`, items, ts: now });
            // At once: the API's order total, and one Redis round trip (the rate-limit counter, the
            // order appended, the product's popularity).
            const [total, replies] = await Promise.all([
                apiJson('/cart/calculate', {
                    method: 'POST',
                    headers: { 'content-type': 'application/json' },
                    body: JSON.stringify({ user_id, items })
                }),
                redis
                    .pipeline()
                    .incr(`bench:ratelimit:${user((number % 100) + 1)}`)
                    .rpush(`bench:history:${user_id}`, entry)
                    .zincrby('bench:popular', 1, `product:${items[0].product_id}`)
                    .exec()
            ]);
            const failed = replies.find(([error]) => error);
            if (failed) throw new Error(`redis: ${failed[0].message}`);
            return structured({
                order_id: total.order_id ?? null,
                user_id,
                total: total.total ?? null,
                items_count: total.items_count ?? null,
                rate_limit_count: replies[0][1],
                status: 'confirmed',
                server_type: serverType
            });
        }
    };
}

await serve({
    port: Number(args.port),
    workers: Number(args.workers),
    async makeFactory() {
        // One Redis connection per worker, shared by every call.
        const redis = new Redis(args.redis);
        const work = handlers(redis);
        return () => {
            const server = new McpServer({ name: 'shop', version: '0.1.0' });
            for (const [name, config] of Object.entries(tools)) server.registerTool(name, config, work[name]);
            return server;
        };
    }
});
