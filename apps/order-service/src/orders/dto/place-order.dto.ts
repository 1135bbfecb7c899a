import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsNotEmpty,
  IsOptional,
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

/** The longest note an order may carry, in code points. */
export const MAX_NOTE_CODE_POINTS = 32_768;

/**
 * The body of `POST /orders`. `customerId` fits `orders.customer_id`, a `varchar(100)`. `note` (gift message,
 * delivery instructions, an attachment as text) travels in OrderPlaced, through the claim check when it is large.
 */
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

  @IsOptional()
  @IsString()
  @MaxCodePoints(MAX_NOTE_CODE_POINTS)
  note?: string;
}
