import {
  getMetadataStorage,
  ValidationTypes,
  type MetadataStorage,
  type ValidationArguments,
} from 'class-validator';

type ValidationMetadata = ReturnType<MetadataStorage['getTargetValidationMetadatas']>[number];

/** One property's checks, in the order class-validator runs them. */
interface PropertyPlan {
  name: string;
  /** `@ValidateIf` conditions: all must hold for the property to be checked. */
  conditions: ValidationMetadata[];
  /** `@IsDefined`, checked before the others. */
  defined: ValidationMetadata[];
  constraints: ValidationMetadata[];
}

/** Validation kinds a plan can check; a class with any other (nested objects, promises) has no plan. */
const PLANNED_KINDS = new Set([
  ValidationTypes.CUSTOM_VALIDATION,
  ValidationTypes.IS_DEFINED,
  ValidationTypes.CONDITIONAL_VALIDATION,
  ValidationTypes.WHITELIST,
]);

/**
 * A message class's class-validator constraints, read once, to prove a valid payload valid without
 * class-validator's executor: with `whitelist` it strips the properties no decorator names, then calls every
 * constraint's `validate` in class-validator's order, and `passes` only when each of them returned `true`.
 * Anything else (a constraint failing, or returning a promise) is left to class-validator, which then
 * decides and writes the errors; a valid payload, the common case, costs a few function calls instead of
 * the executor's per-property arrays and error objects (about half the CPU of consuming a small message).
 *
 * NOTE: a constraint may so be called twice for an invalid payload (here, then by class-validator), which
 * class-validator's own constraints, all pure functions, do not mind.
 */
export class ValidationPlan {
  private constructor(
    private readonly properties: readonly PropertyPlan[],
    private readonly allowed: ReadonlySet<string>,
  ) {}

  /**
   * The plan for `messageClass` validated with no groups, or undefined when it has constraints a plan cannot
   * check (nested validation, promise validation) or none at all (class-validator then refuses every payload).
   */
  static of(messageClass: new () => object): ValidationPlan | undefined {
    const metadatas = getMetadataStorage().getTargetValidationMetadatas(messageClass, '', false, false);
    if (metadatas.length === 0 || metadatas.some((metadata) => !PLANNED_KINDS.has(metadata.type))) {
      return undefined;
    }
    const byName = new Map<string, PropertyPlan>();
    for (const metadata of metadatas) {
      let plan = byName.get(metadata.propertyName);
      if (!plan) {
        plan = { name: metadata.propertyName, conditions: [], defined: [], constraints: [] };
        byName.set(metadata.propertyName, plan);
      }
      if (metadata.type === ValidationTypes.CONDITIONAL_VALIDATION) plan.conditions.push(metadata);
      else if (metadata.type === ValidationTypes.IS_DEFINED) plan.defined.push(metadata);
      else if (metadata.type === ValidationTypes.CUSTOM_VALIDATION) plan.constraints.push(metadata);
    }
    return new ValidationPlan([...byName.values()], new Set(byName.keys()));
  }

  /**
   * Strips the properties of `instance` no decorator names (class-validator's `whitelist`) and tells whether
   * every constraint holds. False means "not proven": class-validator must decide.
   */
  passes(instance: object): boolean {
    const object = instance as Record<string, unknown>;
    for (const key of Object.keys(object)) if (!this.allowed.has(key)) delete object[key];
    for (const property of this.properties) {
      const value = object[property.name];
      let checked = true;
      for (const condition of property.conditions) {
        checked =
          (condition.constraints[0] as (object: object, value: unknown) => boolean)(object, value) && checked;
      }
      if (!checked) continue;
      if (!holds(object, value, property.defined) || !holds(object, value, property.constraints))
        return false;
    }
    return true;
  }
}

/** Whether each of `metadatas` holds for `value`, exactly `true` from every constraint's `validate`. */
function holds(object: Record<string, unknown>, value: unknown, metadatas: ValidationMetadata[]): boolean {
  const storage = getMetadataStorage();
  for (const metadata of metadatas) {
    if (metadata.validateIf && !metadata.validateIf(object, value)) continue;
    const args: ValidationArguments = {
      targetName: (object.constructor ? object.constructor.name : undefined) as string,
      property: metadata.propertyName,
      object,
      value,
      constraints: metadata.constraints,
    };
    for (const constraint of storage.getTargetValidatorConstraints(metadata.constraintCls)) {
      const validator = constraint.instance;
      if (!metadata.each || !(Array.isArray(value) || value instanceof Set || value instanceof Map)) {
        if (validator.validate(value, args) !== true) return false;
        continue;
      }
      const items: unknown[] = value instanceof Map ? Array.from(value.values()) : Array.from(value);
      for (const item of items) if (validator.validate(item, args) !== true) return false;
    }
  }
  return true;
}
