/* A thin C shim over libtracefs: tracefs.h does not compile as C++ (g++ 12), so only
 * src/sys/tracefs_shim.c includes it and C++ code calls these functions. Ownership follows
 * libtracefs: returned strings are malloc'd (free() them), lists go to iotrace_tfs_list_free. */
#ifndef IOTRACE_SYS_TRACEFS_SHIM_H_
#define IOTRACE_SYS_TRACEFS_SHIM_H_

#ifdef __cplusplus
extern "C" {
#endif

struct tracefs_instance;

int iotrace_tfs_set_dir(const char* dir);
const char* iotrace_tfs_dir(void);

char* iotrace_tfs_event_file_read(struct tracefs_instance* inst, const char* system,
                                  const char* event, const char* file, int* size);
int iotrace_tfs_event_file_write(struct tracefs_instance* inst, const char* system,
                                 const char* event, const char* file, const char* str);
int iotrace_tfs_event_enable(struct tracefs_instance* inst, const char* system, const char* event);
int iotrace_tfs_event_disable(struct tracefs_instance* inst, const char* system,
                              const char* event);

/* Creates a new instance; returns NULL with errno EEXIST when it already existed. */
struct tracefs_instance* iotrace_tfs_instance_create(const char* name);
/* Removes the instance directory and frees the handle. */
int iotrace_tfs_instance_destroy(struct tracefs_instance* inst);
char* iotrace_tfs_instance_file_read(struct tracefs_instance* inst, const char* file, int* size);
int iotrace_tfs_instance_file_write(struct tracefs_instance* inst, const char* file,
                                    const char* str);
char* iotrace_tfs_error_last(struct tracefs_instance* inst);
char** iotrace_tfs_instances(const char* regex);
void iotrace_tfs_list_free(char** list);

/* Dynamic probe events (kprobes, uprobes). The handle is opaque to C++. */
struct tracefs_dynevent;
/* addr: "SYM[+OFFS]", "MOD:SYM[+OFFS]" or an address; maxactive only for return probes. */
struct tracefs_dynevent* iotrace_tfs_kprobe_alloc(const char* system, const char* event,
                                                  const char* addr, const char* fetchargs,
                                                  int is_return, unsigned int maxactive);
struct tracefs_dynevent* iotrace_tfs_uprobe_alloc(const char* system, const char* event,
                                                  const char* file, unsigned long long offset,
                                                  const char* fetchargs, int is_return);
int iotrace_tfs_dynevent_create(struct tracefs_dynevent* devent);
/* force: disable the event in every instance first. */
int iotrace_tfs_dynevent_destroy(struct tracefs_dynevent* devent, int force);
void iotrace_tfs_dynevent_free(struct tracefs_dynevent* devent);
/* The probe events (kprobe/kretprobe/uprobe/uretprobe) that exist now, NULL-terminated;
 * include_kprobes 0 where the kernel has no kprobe_events file. Free with
 * iotrace_tfs_dynevent_list_free. */
struct tracefs_dynevent** iotrace_tfs_probe_events(int include_kprobes);
void iotrace_tfs_dynevent_list_free(struct tracefs_dynevent** list);
/* Group and event name of a dynamic event (malloc'd; free() them). Returns its type: 1 kprobe,
 * 2 kretprobe, 4 uprobe, 8 uretprobe (enum tracefs_dynevent_type), or -1. */
int iotrace_tfs_dynevent_names(struct tracefs_dynevent* devent, char** system, char** event);
int iotrace_tfs_error_clear(struct tracefs_instance* inst);

#ifdef __cplusplus
}
#endif

#endif /* IOTRACE_SYS_TRACEFS_SHIM_H_ */
