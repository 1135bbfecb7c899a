/** Where an order is in its life: placed by the customer, paid by payment, shipped by shipping. */
export type OrderStatus = 'placed' | 'paid' | 'shipped';
