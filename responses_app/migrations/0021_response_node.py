from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("responses_app", "0020_stored_chat_completions"),
    ]

    operations = [
        migrations.AddField(
            model_name="response",
            name="node",
            field=models.CharField(blank=True, default="", max_length=128),
        ),
    ]
