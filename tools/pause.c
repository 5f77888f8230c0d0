/* The pause program of hull's test images (PID 1 of a pod's sandbox container),
 * and hull-pause, PID 1 of the gVisor sandbox of a runsc pod made through the
 * Sandbox API (docs/sandbox-api.md).
 * It holds the pod's namespaces open, reaps children it inherits when the pod
 * shares one PID namespace, and exits 0 on SIGTERM or SIGINT, as the
 * Kubernetes pause container does. Built by tools/mkimage with gcc -static,
 * and as hull-pause by shim/CMakeLists.txt. */
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static void Quit(int sig) {
  (void)sig;
  _exit(0);
}

static void Reap(int sig) {
  (void)sig;
  while (waitpid(-1, NULL, WNOHANG) > 0) {
  }
}

static int Handle(int sig, void (*handler)(int)) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = handler;
  sa.sa_flags = SA_RESTART;
  sigemptyset(&sa.sa_mask);
  return sigaction(sig, &sa, NULL);
}

int main(void) {
  if (getpid() != 1) {
    static const char kWarning[] = "pause: warning: not running as PID 1\n";
    (void)!write(STDERR_FILENO, kWarning, sizeof(kWarning) - 1);
  }
  if (Handle(SIGINT, Quit) != 0 || Handle(SIGTERM, Quit) != 0 || Handle(SIGCHLD, Reap) != 0) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
