export declare const SERVICE_NODE_FLAGS: string[];
export declare const startsService: (script: string, args: string[]) => boolean;
