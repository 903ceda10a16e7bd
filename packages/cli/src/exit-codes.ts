/** The command ran and found nothing that needs attention. */
export const EXIT_OK = 0;
/** The command failed, or found something that needs attention where its help says so. */
export const EXIT_FAILED = 1;
/** Bad arguments: a message on stderr, nothing read or changed. */
export const EXIT_USAGE = 2;
