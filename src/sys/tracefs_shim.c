#include "tracefs_shim.h"

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

struct tracefs_dynevent* iotrace_tfs_kprobe_alloc(const char* system, const char* event,
                                                  const char* addr, const char* fetchargs,
                                                  int is_return, unsigned int maxactive) {
  if (is_return) return tracefs_kretprobe_alloc(system, event, addr, fetchargs, maxactive);
  return tracefs_kprobe_alloc(system, event, addr, fetchargs);
}

struct tracefs_dynevent* iotrace_tfs_uprobe_alloc(const char* system, const char* event,
                                                  const char* file, unsigned long long offset,
                                                  const char* fetchargs, int is_return) {
  if (is_return) return tracefs_uretprobe_alloc(system, event, file, offset, fetchargs);
  return tracefs_uprobe_alloc(system, event, file, offset, fetchargs);
}

int iotrace_tfs_dynevent_create(struct tracefs_dynevent* devent) {
  return tracefs_dynevent_create(devent);
}

int iotrace_tfs_dynevent_destroy(struct tracefs_dynevent* devent, int force) {
  return tracefs_dynevent_destroy(devent, force != 0);
}

void iotrace_tfs_dynevent_free(struct tracefs_dynevent* devent) { tracefs_dynevent_free(devent); }

struct tracefs_dynevent** iotrace_tfs_probe_events(int include_kprobes) {
  /* libtracefs stops at the first type whose control file is missing, so kprobe types are
   * asked for only where kprobe_events exists. */
  unsigned int types = TRACEFS_DYNEVENT_UPROBE | TRACEFS_DYNEVENT_URETPROBE;
  if (include_kprobes) types |= TRACEFS_DYNEVENT_KPROBE | TRACEFS_DYNEVENT_KRETPROBE;
  return tracefs_dynevent_get_all(types, NULL);
}

void iotrace_tfs_dynevent_list_free(struct tracefs_dynevent** list) {
  tracefs_dynevent_list_free(list);
}

int iotrace_tfs_dynevent_names(struct tracefs_dynevent* devent, char** system, char** event) {
  *system = NULL;
  *event = NULL;
  enum tracefs_dynevent_type type = tracefs_dynevent_info(devent, system, event, NULL, NULL, NULL);
  return type == TRACEFS_DYNEVENT_UNKNOWN ? -1 : (int)type;
}

int iotrace_tfs_error_clear(struct tracefs_instance* inst) { return tracefs_error_clear(inst); }
