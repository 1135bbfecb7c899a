import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsNotEmpty,
  IsString,
  Max,
  Min,
  ValidateNested,
} from 'class-validator';
import { IsCurrencyAmount } from './is-currency-amount.decorator';
import { MaxCodePoints } from './max-code-points.decorator';

/**
 * One line of `POST /orders`. String lengths are in code points, as the columns count them (`order_items.sku` is
 * `varchar(64)`).
 */
export class OrderItemDto {
  @IsString()
  @IsNotEmpty()
  @MaxCodePoints(64)
  sku!: string;

  @IsInt()
  @Min(1)
  @Max(10_000)
  quantity!: number;

  /** In currency units with at most two decimal places, e.g. 19.99; stored as integer cents. */
  @IsCurrencyAmount()
  unitPrice!: number;
}

/** The body of `POST /orders`. `customerId` fits `orders.customer_id`, a `varchar(100)`. */
export class PlaceOrderDto {
  @IsString()
  @IsNotEmpty()
  @MaxCodePoints(100)
  customerId!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => OrderItemDto)
  items!: OrderItemDto[];
}
