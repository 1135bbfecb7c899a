import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  IsArray,
  IsInt,
  IsNotEmpty,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { IsCurrencyAmount } from './is-currency-amount.decorator';

/** One line of `POST /orders`. */
export class OrderItemDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(64)
  sku!: string;

  @IsInt()
  @Min(1)
  @Max(10_000)
  quantity!: number;

  /** In currency units with at most two decimal places, e.g. 19.99; stored as integer cents. */
  @IsCurrencyAmount()
  unitPrice!: number;
}

/** The body of `POST /orders`. */
export class PlaceOrderDto {
  @IsString()
  @IsNotEmpty()
  @MaxLength(100)
  customerId!: string;

  @IsArray()
  @ArrayMinSize(1)
  @ArrayMaxSize(100)
  @ValidateNested({ each: true })
  @Type(() => OrderItemDto)
  items!: OrderItemDto[];
}
