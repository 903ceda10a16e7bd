/**
 * The Nest orders service, wired: a node-postgres pool for Drizzle, the Nest application on a
 * port of 127.0.0.1, stopped with `app.close()` (the relay stops, its publisher and the store
 * close). The same options and result as the flagship's `startOrdersService`, so either can
 * run as the orders process (`main.ts`), or in a test's own process.
 */
import 'reflect-metadata';
import type { AddressInfo } from 'node:net';
import type { Server } from 'node:http';
import { NestFactory } from '@nestjs/core';
import { drizzle } from 'drizzle-orm/node-postgres';
import { Pool } from 'pg';
import type { OrdersService, OrdersServiceOptions } from '../order-service/orders/service';
import { OrdersAppModule } from './app.module';

/** Starts the Nest orders API and its relay. */
export async function startNestOrdersService(
  options: OrdersServiceOptions,
): Promise<OrdersService> {
  // Drizzle's pool holds the requests' transactions; the store's (app.module.ts) the keys'
  // reservations and the relay's statements.
  const pool = new Pool({ connectionString: options.databaseUrl, max: 15 });
  try {
    const app = await NestFactory.create(
      OrdersAppModule.forRoot({ ...options, db: drizzle(pool) }),
      // A failed boot throws (Nest would otherwise abort the process); only problems are logged.
      { abortOnError: false, logger: ['error', 'warn'] },
    );
    await app.listen(options.port, '127.0.0.1');
    const { port } = (app.getHttpServer() as Server).address() as AddressInfo;
    return {
      url: `http://127.0.0.1:${port}`,
      stop: async () => {
        await app.close();
        await pool.end();
      },
    };
  } catch (error) {
    await pool.end();
    throw error;
  }
}
