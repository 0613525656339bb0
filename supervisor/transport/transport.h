/* The transports: stdio, and Streamable HTTP (http*.c). */
#ifndef TRANSPORT_H
#define TRANSPORT_H

/* stdio.c: quit is called when the client's input ends. */
int stdio_start(void (*)(void));
void stdio_stop(void);
int stdio_open(void);

/* http.c (Streamable HTTP) */
int http_start(void);
void http_stop(void);

/* control.c: the control socket (mcp-sandboxd ls, top, logs, stop) */
struct json_object;
int control_start(void);
void control_stop(void);

#endif
