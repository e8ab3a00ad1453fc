"""nsys_tables.py - the tables of an Nsight Systems SQLite export that
`bcgtool report` reads, as the synthetic exports of t/nsys-recorded.py and
t/nsys-ranks.py create them (the columns report uses, no more)."""


def create(c, driver=False):
    """Create the tables on cursor C; CUPTI_ACTIVITY_KIND_DRIVER too when
    DRIVER (kernels launched through the driver API, as NCCL's)."""
    c.execute("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT)")
    c.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT, correlationId INT, "
              "graphNodeId INT, gridX INT, gridY INT, gridZ INT, blockX INT, blockY INT, "
              "blockZ INT, shortName INT, mangledName INT)")
    c.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_RUNTIME (start INT, end INT, globalTid INT, "
              "correlationId INT)")
    if driver:
        c.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_DRIVER (start INT, end INT, globalTid INT, "
                  "correlationId INT)")
    c.execute("CREATE TABLE NVTX_EVENTS (start INT, end INT, globalTid INT, text TEXT)")
