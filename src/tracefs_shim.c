#include "iotrace/tracefs_shim.h"

#include <errno.h>
#include <tracefs.h>

int iotrace_tfs_set_dir(const char* dir) { return tracefs_set_tracing_dir((char*)dir); }
const char* iotrace_tfs_dir(void) { return tracefs_tracing_dir(); }

char* iotrace_tfs_event_file_read(struct tracefs_instance* inst, const char* system,
                                  const char* event, const char* file, int* size) {
  return tracefs_event_file_read(inst, system, event, file, size);
}

int iotrace_tfs_event_file_write(struct tracefs_instance* inst, const char* system,
                                 const char* event, const char* file, const char* str) {
  return tracefs_event_file_write(inst, system, event, file, str);
}

int iotrace_tfs_event_enable(struct tracefs_instance* inst, const char* system,
                             const char* event) {
  return tracefs_event_enable(inst, system, event);
}

int iotrace_tfs_event_disable(struct tracefs_instance* inst, const char* system,
                              const char* event) {
  return tracefs_event_disable(inst, system, event);
}

struct tracefs_instance* iotrace_tfs_instance_create(const char* name) {
  if (tracefs_instance_exists(name)) {
    errno = EEXIST;
    return NULL;
  }
  struct tracefs_instance* inst = tracefs_instance_create(name);
  if (inst == NULL && errno == 0) errno = EIO;
  return inst;
}

int iotrace_tfs_instance_destroy(struct tracefs_instance* inst) {
  int ret = tracefs_instance_destroy(inst);
  int saved = errno;
  tracefs_instance_free(inst);
  errno = saved;
  return ret;
}

char* iotrace_tfs_instance_file_read(struct tracefs_instance* inst, const char* file, int* size) {
  return tracefs_instance_file_read(inst, file, size);
}

int iotrace_tfs_instance_file_write(struct tracefs_instance* inst, const char* file,
                                    const char* str) {
  return tracefs_instance_file_write(inst, file, str);
}

char* iotrace_tfs_error_last(struct tracefs_instance* inst) { return tracefs_error_last(inst); }
char** iotrace_tfs_instances(const char* regex) { return tracefs_instances(regex); }
void iotrace_tfs_list_free(char** list) { tracefs_list_free(list); }
