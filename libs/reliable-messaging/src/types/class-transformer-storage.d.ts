// class-transformer ships the declaration of its metadata storage apart from the file that holds it.
declare module 'class-transformer/cjs/storage.js' {
  export { defaultMetadataStorage } from 'class-transformer/types/storage';
}
