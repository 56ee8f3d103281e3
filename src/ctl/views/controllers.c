/*
 * controllers.c - the controllers' view (controllers.h).
 */
#include <stdlib.h>

#include "ha/ha.h"
#include "views/controllers.h"

void ctl_controllers_view(ctl_t *c, ctl_buf_t *b) {
    if (c->ha) {
        char *v = ctl_ha_view(c->ha);
        ctl_buf_puts(b, v ? v : "{}");
        free(v);
    } else {
        ctl_buf_printf(b, "{\"mode\":\"single\",\"self\":\"local\",\"leader\":\"local\","
                          "\"epoch\":%llu,\"applied\":0,\"members\":[{\"name\":\"local\",\"api\":",
                       (unsigned long long)c->epoch);
        ctl_buf_jstr(b, c->cfg.listen);
        ctl_buf_puts(b, ",\"agent\":");
        ctl_buf_jstr(b, c->cfg.agent_listen);
        ctl_buf_puts(b, ",\"role\":\"leader\",\"applied\":0,\"lag\":0}]}");
    }
    ctl_buf_putc(b, '\n');
}
